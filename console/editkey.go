package console

import (
	"errors"
	"net/http"
	"strings"
)

// editKeyData is the key edit page's data: the key, and the form's
// fields (the key's, or echoed after an error).
type editKeyData struct {
	Key                   Key
	Name, Models, Expires string
}

// editKeyPage shows the form that changes any user's key: its name,
// models and expiry; its limits are the limits form's.
func (h *Handler) editKeyPage(w http.ResponseWriter, r *http.Request) {
	k, err := h.anyKey(r, r.PathValue("id"))
	if errors.Is(err, ErrNotFound) {
		h.fail(w, r, http.StatusNotFound, "there is no such key")
		return
	}
	if err != nil {
		h.internal(w, r, "reading a key", err)
		return
	}
	d := editKeyData{Key: k, Name: k.Name, Models: strings.Join(k.Models, ", ")}
	if k.ExpiresAt != nil {
		// The form's date is the last day the key works (see postedKey).
		d.Expires = k.ExpiresAt.UTC().Add(-1).Format(dayLayout)
	}
	h.render(w, r, http.StatusOK, "editkey", "Edit key", d)
}

// editKey saves the edit form: name, models (comma-separated, empty for
// every model) and expires (a date, empty for never).
func (h *Handler) editKey(w http.ResponseWriter, r *http.Request) {
	k, err := h.anyKey(r, r.PathValue("id"))
	if errors.Is(err, ErrNotFound) {
		h.fail(w, r, http.StatusNotFound, "there is no such key")
		return
	}
	if err != nil {
		h.internal(w, r, "reading a key", err)
		return
	}
	back := editKeyData{Key: k, Name: r.PostFormValue("name"), Models: r.PostFormValue("models"), Expires: r.PostFormValue("expires")}
	o, msg := h.postedKey(r)
	if msg != "" {
		h.renderMsg(w, r, http.StatusBadRequest, "editkey", "Edit key", back, msg)
		return
	}
	_, err = h.cfg.Services.Operators.UpdateKey(r.Context(), k.ID, KeyEdit{Name: o.Name, Models: o.Models, ExpiresAt: o.ExpiresAt})
	if errors.Is(err, ErrInvalid) {
		h.renderMsg(w, r, http.StatusBadRequest, "editkey", "Edit key", back, err.Error())
		return
	}
	if errors.Is(err, ErrNotFound) {
		h.fail(w, r, http.StatusNotFound, "there is no such key")
		return
	}
	if err != nil {
		h.internal(w, r, "changing a key", err)
		return
	}
	http.Redirect(w, r, h.cfg.Prefix+"/operators/keys?q="+k.ID, http.StatusSeeOther)
}
