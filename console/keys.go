package console

import (
	"errors"
	"net/http"
	"slices"
	"strings"

	"github.com/caddy-air/caddy-air/billing"
	"github.com/caddy-air/caddy-air/keys"
)

// keysData is the keys page's data.
type keysData struct {
	Keys []Key
	// Secret is the key just created, shown once.
	Secret string
	// Created is the key just created.
	Created *Key
	// Name, Expires, Models and Limit echo the form after an error.
	Name, Expires, Models, Limit string
	// FormToken is the create form's one-time token.
	FormToken string
	// Notice is a message that is not an error.
	Notice string
	// Budget is the user's own limits and spend.
	Budget billing.BudgetStatus
}

// maxKeyName bounds a key's name, in characters: the key service's
// bound, checked here to keep the form's input.
const maxKeyName = keys.MaxNameLen

// keysPage shows the user's keys and, once, the secret of the key the
// form just created (see setFlash).
func (h *Handler) keysPage(w http.ResponseWriter, r *http.Request) {
	var d keysData
	if secret, id, ok := h.takeFlash(w, r, "/keys", userOf(r)); ok {
		d.Secret = secret
		d.Created = &Key{ID: id}
	}
	if r.URL.Query().Get("sent") == "again" {
		d.Notice = "That form was already sent: the key it created is listed below, and its secret was shown only once. Nothing new was created."
	}
	h.showKeys(w, r, http.StatusOK, d, "")
}

// showKeys renders the keys page with d and an error message.
func (h *Handler) showKeys(w http.ResponseWriter, r *http.Request, status int, d keysData, msg string) {
	if h.cfg.Services.Keys == nil {
		h.fail(w, r, http.StatusNotFound, "keys are not served here")
		return
	}
	list, err := h.cfg.Services.Keys.List(r.Context(), userOf(r))
	if err != nil {
		h.internal(w, r, "listing keys", err)
		return
	}
	slices.SortFunc(list, func(a, b Key) int { return b.CreatedAt.Compare(a.CreatedAt) })
	d.Keys = list
	if d.Budget, err = h.cfg.Services.Keys.Budget(r.Context(), userOf(r)); err != nil {
		h.internal(w, r, "reading your limits", err)
		return
	}
	if d.Created != nil {
		for i := range list {
			if list[i].ID == d.Created.ID {
				d.Created = &list[i]
			}
		}
	}
	d.FormToken = h.formToken(userOf(r))
	h.renderMsg(w, r, status, "keys", "API keys", d, msg)
}

// createKey creates a key from the form (form_token: the form's one-time
// token; name; expires: a date or empty; models: comma-separated ids or
// globs, empty for all; limit: an amount or empty) and redirects to the
// keys page, which shows its secret once.
func (h *Handler) createKey(w http.ResponseWriter, r *http.Request) {
	if h.cfg.Services.Keys == nil {
		h.fail(w, r, http.StatusNotFound, "keys are not served here")
		return
	}
	if err := h.useFormToken(userOf(r), r.PostFormValue("form_token")); errors.Is(err, errFormUsed) {
		http.Redirect(w, r, h.cfg.Prefix+"/keys?sent=again", http.StatusSeeOther)
		return
	} else if err != nil {
		h.showKeys(w, r, http.StatusBadRequest, keysData{}, err.Error())
		return
	}
	// The form is echoed, trimmed, after a refusal.
	back := keysData{Name: strings.TrimSpace(r.PostFormValue("name")), Expires: strings.TrimSpace(r.PostFormValue("expires")),
		Models: strings.TrimSpace(r.PostFormValue("models")), Limit: strings.TrimSpace(r.PostFormValue("limit"))}
	o, msg := h.postedKey(r)
	if msg != "" {
		h.showKeys(w, r, http.StatusBadRequest, back, msg)
		return
	}
	secret, k, err := h.cfg.Services.Keys.Create(r.Context(), userOf(r), o)
	if errors.Is(err, ErrInvalid) {
		h.showKeys(w, r, http.StatusBadRequest, back, err.Error())
		return
	}
	if err != nil {
		h.internal(w, r, "creating a key", err)
		return
	}
	// Post/Redirect/Get: the secret travels in a cookie to the page the
	// redirect lands on, so a refresh there re-posts nothing.
	h.setFlash(w, r, "/keys", userOf(r), secret, k.ID)
	http.Redirect(w, r, h.cfg.Prefix+"/keys", http.StatusSeeOther)
}

// ownKey returns the signed-in user's key id, or ErrNotFound: a user
// cannot tell another user's key from one that does not exist.
func (h *Handler) ownKey(r *http.Request, id string) (Key, error) {
	list, err := h.cfg.Services.Keys.List(r.Context(), userOf(r))
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

// confirmRevoke asks before a key is revoked.
func (h *Handler) confirmRevoke(w http.ResponseWriter, r *http.Request) {
	if h.cfg.Services.Keys == nil {
		h.fail(w, r, http.StatusNotFound, "keys are not served here")
		return
	}
	k, err := h.ownKey(r, r.PathValue("id"))
	if errors.Is(err, ErrNotFound) {
		h.fail(w, r, http.StatusNotFound, "you have no such key")
		return
	}
	if err != nil {
		h.internal(w, r, "reading a key", err)
		return
	}
	h.render(w, r, http.StatusOK, "revoke", "Revoke key", revokeData{Key: k, Action: h.cfg.Prefix + "/keys/" + k.ID + "/revoke",
		Back: h.cfg.Prefix + "/keys"})
}

// revokeKey revokes one of the user's keys.
func (h *Handler) revokeKey(w http.ResponseWriter, r *http.Request) {
	if h.cfg.Services.Keys == nil {
		h.fail(w, r, http.StatusNotFound, "keys are not served here")
		return
	}
	err := h.cfg.Services.Keys.Revoke(r.Context(), userOf(r), r.PathValue("id"))
	if errors.Is(err, ErrNotFound) {
		h.fail(w, r, http.StatusNotFound, "you have no such key")
		return
	}
	if err != nil {
		h.internal(w, r, "revoking a key", err)
		return
	}
	http.Redirect(w, r, h.cfg.Prefix+"/keys", http.StatusSeeOther)
}
