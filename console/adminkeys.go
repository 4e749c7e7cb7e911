package console

import (
	"cmp"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// allKeysData is the operators' keys page's data.
type allKeysData struct {
	// Keys are the keys the search selects, by name.
	Keys []Key
	// Total counts every key, before the search.
	Total int
	// Search is the search text; State the state searched for.
	Search, State string
	// Secret is the key just created, shown once; Created is that key.
	Secret  string
	Created *Key
	// User, Name, Expires, Models and Limit echo the create form after
	// an error.
	User, Name, Expires, Models, Limit string
	// FormToken is the create form's one-time token.
	FormToken string
}

// keyMatches reports whether k matches the search text s (a substring of
// its id, name, user or one of its models, any case) and state ("" for
// any).
func keyMatches(k Key, s, state string) bool {
	if state != "" && k.State != state {
		return false
	}
	if s == "" {
		return true
	}
	s = strings.ToLower(s)
	for _, f := range append([]string{k.ID, k.Name, k.User}, k.Models...) {
		if strings.Contains(strings.ToLower(f), s) {
			return true
		}
	}
	return false
}

// sortKeysByName orders keys by name (unnamed last), then user, then
// newest first.
func sortKeysByName(list []Key) {
	slices.SortStableFunc(list, func(a, b Key) int {
		if (a.Name == "") != (b.Name == "") {
			if a.Name == "" {
				return 1
			}
			return -1
		}
		return cmp.Or(cmp.Compare(strings.ToLower(a.Name), strings.ToLower(b.Name)), cmp.Compare(a.User, b.User),
			b.CreatedAt.Compare(a.CreatedAt))
	})
}

// allKeysPage lists every user's keys, searched by q and state.
func (h *Handler) allKeysPage(w http.ResponseWriter, r *http.Request) {
	d := allKeysData{Search: strings.TrimSpace(r.URL.Query().Get("q")), State: r.URL.Query().Get("state")}
	if secret, id, ok := h.takeFlash(w, r, "/operators/keys", userOf(r)); ok {
		d.Secret, d.Created = secret, &Key{ID: id}
	}
	h.showAllKeys(w, r, http.StatusOK, d, "")
}

// showAllKeys renders the operators' keys page with d and an error
// message.
func (h *Handler) showAllKeys(w http.ResponseWriter, r *http.Request, status int, d allKeysData, msg string) {
	list, err := h.cfg.Services.Operators.AllKeys(r.Context())
	if err != nil {
		h.internal(w, r, "listing keys", err)
		return
	}
	d.Total = len(list)
	for _, k := range list {
		if d.Created != nil && k.ID == d.Created.ID {
			d.Created = &k
		}
		if keyMatches(k, d.Search, d.State) {
			d.Keys = append(d.Keys, k)
		}
	}
	sortKeysByName(d.Keys)
	d.FormToken = h.formToken(userOf(r))
	h.renderMsg(w, r, status, "allkeys", "All keys", d, msg)
}

// postedKey reads the key form's fields into a NewKey; a message says
// what is wrong with them.
func (h *Handler) postedKey(r *http.Request) (NewKey, string) {
	name := strings.TrimSpace(r.PostFormValue("name"))
	exp := strings.TrimSpace(r.PostFormValue("expires"))
	o := NewKey{Name: name, Limit: strings.TrimSpace(r.PostFormValue("limit"))}
	if utf8.RuneCountInString(name) > maxKeyName {
		return o, fmt.Sprintf("the name is longer than %d characters", maxKeyName)
	}
	if exp != "" {
		t, err := time.Parse(dayLayout, exp)
		if err != nil {
			return o, "the expiry must be a date (YYYY-MM-DD)"
		}
		// The key works through the whole chosen day (UTC).
		t = t.Add(24 * time.Hour)
		if !t.After(h.cfg.Now()) {
			return o, "the expiry must be today or later"
		}
		o.ExpiresAt = &t
	}
	for m := range strings.SplitSeq(r.PostFormValue("models"), ",") {
		if m = strings.TrimSpace(m); m != "" {
			o.Models = append(o.Models, m)
		}
	}
	return o, ""
}

// createKeyFor creates a key for the user the form names, and redirects
// to the keys page, which shows its secret once to the operator.
func (h *Handler) createKeyFor(w http.ResponseWriter, r *http.Request) {
	if err := h.useFormToken(userOf(r), r.PostFormValue("form_token")); errors.Is(err, errFormUsed) {
		http.Redirect(w, r, h.cfg.Prefix+"/operators/keys", http.StatusSeeOther)
		return
	} else if err != nil {
		h.showAllKeys(w, r, http.StatusBadRequest, allKeysData{}, err.Error())
		return
	}
	user := strings.TrimSpace(r.PostFormValue("user"))
	back := allKeysData{User: user, Name: r.PostFormValue("name"), Expires: r.PostFormValue("expires"),
		Models: r.PostFormValue("models"), Limit: r.PostFormValue("limit")}
	if user == "" {
		h.showAllKeys(w, r, http.StatusBadRequest, back, "name the user the key is for")
		return
	}
	o, msg := h.postedKey(r)
	if msg != "" {
		h.showAllKeys(w, r, http.StatusBadRequest, back, msg)
		return
	}
	secret, k, err := h.cfg.Services.Operators.CreateKeyFor(r.Context(), user, o)
	if errors.Is(err, ErrInvalid) {
		h.showAllKeys(w, r, http.StatusBadRequest, back, err.Error())
		return
	}
	if err != nil {
		h.internal(w, r, "creating a key", err)
		return
	}
	h.setFlash(w, r, "/operators/keys", userOf(r), secret, k.ID)
	http.Redirect(w, r, h.cfg.Prefix+"/operators/keys?q="+k.ID, http.StatusSeeOther)
}

// anyKey returns the key id of any user, or ErrNotFound.
func (h *Handler) anyKey(r *http.Request, id string) (Key, error) {
	list, err := h.cfg.Services.Operators.AllKeys(r.Context())
	if err != nil {
		return Key{}, err
	}
	for _, k := range list {
		if k.ID == id {
			return k, nil
		}
	}
	return Key{}, ErrNotFound
}

// confirmRevokeAny asks an operator before any user's key is revoked.
func (h *Handler) confirmRevokeAny(w http.ResponseWriter, r *http.Request) {
	k, err := h.anyKey(r, r.PathValue("id"))
	if errors.Is(err, ErrNotFound) {
		h.fail(w, r, http.StatusNotFound, "there is no such key")
		return
	}
	if err != nil {
		h.internal(w, r, "reading a key", err)
		return
	}
	h.render(w, r, http.StatusOK, "revoke", "Revoke key", revokeData{Key: k, Action: h.cfg.Prefix + "/operators/keys/" + k.ID + "/revoke",
		Back: h.cfg.Prefix + "/operators/keys"})
}

// revokeAnyKey revokes any user's key.
func (h *Handler) revokeAnyKey(w http.ResponseWriter, r *http.Request) {
	err := h.cfg.Services.Operators.RevokeKey(r.Context(), r.PathValue("id"))
	if errors.Is(err, ErrNotFound) {
		h.fail(w, r, http.StatusNotFound, "there is no such key")
		return
	}
	if err != nil {
		h.internal(w, r, "revoking a key", err)
		return
	}
	http.Redirect(w, r, h.cfg.Prefix+"/operators/keys", http.StatusSeeOther)
}

// revokeData is the revoke page's data: the key, where the form posts
// and where Cancel leads.
type revokeData struct {
	Key
	Action, Back string
}
