package console

import (
	"context"
	"errors"
	"net/http"
	"time"
)

// KeyRegenerator gives keys new secrets. An OperatorService that
// implements it gets a “Regenerate…” action on the operators' keys page.
type KeyRegenerator interface {
	// RegenerateKey gives any user's key id a new secret, returned once;
	// the old one keeps working for grace. ErrNotFound if there is no
	// such key; an error about the key's state or the grace wraps
	// ErrInvalid.
	RegenerateKey(ctx context.Context, id string, grace time.Duration) (secret string, err error)
}

// graceChoices are the grace periods the regenerate form offers.
var graceChoices = []struct {
	Value, Label string
}{
	{"0s", "none: the old secret stops now"},
	{"1h", "1 hour"},
	{"24h", "24 hours"},
	{"168h", "7 days"},
}

// regenerateData is the regenerate page's data.
type regenerateData struct {
	Key
	Action, Back string
	Choices      any
}

// regenerator is the operators' service as a KeyRegenerator, or nil.
func (h *Handler) regenerator() KeyRegenerator {
	kr, _ := h.cfg.Services.Operators.(KeyRegenerator)
	return kr
}

// confirmRegenerate asks an operator for the grace of a key's new secret.
func (h *Handler) confirmRegenerate(w http.ResponseWriter, r *http.Request) {
	if h.regenerator() == nil {
		h.fail(w, r, http.StatusNotFound, "keys cannot be regenerated here")
		return
	}
	k, err := h.anyKey(r, r.PathValue("id"))
	if errors.Is(err, ErrNotFound) {
		h.fail(w, r, http.StatusNotFound, "there is no such key")
		return
	}
	if err != nil {
		h.internal(w, r, "reading a key", err)
		return
	}
	h.render(w, r, http.StatusOK, "regenerate", "Regenerate key", regenerateData{Key: k,
		Action: h.cfg.Prefix + "/operators/keys/" + k.ID + "/regenerate", Back: h.cfg.Prefix + "/operators/keys", Choices: graceChoices})
}

// regenerateKey gives the key a new secret and shows it once on the keys
// page, as a created key's.
func (h *Handler) regenerateKey(w http.ResponseWriter, r *http.Request) {
	kr := h.regenerator()
	if kr == nil {
		h.fail(w, r, http.StatusNotFound, "keys cannot be regenerated here")
		return
	}
	grace, err := time.ParseDuration(r.PostFormValue("grace"))
	if err != nil {
		h.fail(w, r, http.StatusBadRequest, "choose how long the old secret keeps working")
		return
	}
	id := r.PathValue("id")
	secret, err := kr.RegenerateKey(r.Context(), id, grace)
	switch {
	case errors.Is(err, ErrNotFound):
		h.fail(w, r, http.StatusNotFound, "there is no such key")
		return
	case errors.Is(err, ErrInvalid):
		h.fail(w, r, http.StatusBadRequest, err.Error())
		return
	case err != nil:
		h.internal(w, r, "regenerating a key", err)
		return
	}
	h.setFlash(w, r, "/operators/keys", userOf(r), secret, id)
	http.Redirect(w, r, h.cfg.Prefix+"/operators/keys?q="+id, http.StatusSeeOther)
}
