package admin

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/caddy-air/caddy-air/keys"
)

// CreateKeyRequest is the body of POST /air/keys.
type CreateKeyRequest struct {
	keys.CreateOptions
	// ExpiresIn is an alternative to expires_at: a duration from now such
	// as "720h" or "30d".
	ExpiresIn string `json:"expires_in,omitempty"`
}

// CreateKeyResponse is the answer to POST /air/keys and to a regenerate:
// the secret, shown once.
type CreateKeyResponse struct {
	*keys.Key
	// Secret is the API key itself. It is not stored and cannot be shown
	// again.
	Secret string `json:"key"`
}

// RegenerateRequest is the body of POST /air/keys/<id>/regenerate.
type RegenerateRequest struct {
	// Grace is how long the old secret keeps working, a Caddy duration
	// such as "24h"; empty or "0": it stops at once.
	Grace string `json:"grace,omitempty"`
}

func (a API) handleKeys(w http.ResponseWriter, r *http.Request) error {
	s, err := a.started()
	if err != nil {
		return err
	}
	switch r.Method {
	case http.MethodGet:
		list, err := s.Keys.List(r.Context(), r.URL.Query().Get("user"))
		if err != nil {
			return apiErr(http.StatusInternalServerError, err)
		}
		if list == nil {
			list = []*keys.Key{}
		}
		return writeJSON(w, http.StatusOK, list)
	case http.MethodPost:
		var req CreateKeyRequest
		if err := a.decodeBody(w, r, &req, false, "request"); err != nil {
			return err
		}
		if req.ExpiresIn != "" {
			d, err := a.parseDuration(req.ExpiresIn)
			if err != nil || d <= 0 {
				return apiErr(http.StatusBadRequest, fmt.Errorf("expires_in: bad duration %q", req.ExpiresIn))
			}
			t := time.Now().Add(d).UTC()
			req.ExpiresAt = &t
		}
		secret, k, err := s.Keys.Create(r.Context(), req.CreateOptions)
		if err != nil {
			return apiErr(http.StatusBadRequest, err)
		}
		return writeJSON(w, http.StatusCreated, CreateKeyResponse{Key: k, Secret: secret})
	default:
		return notAllowed(r)
	}
}

func (a API) handleKey(w http.ResponseWriter, r *http.Request) error {
	s, err := a.started()
	if err != nil {
		return err
	}
	id := strings.TrimPrefix(r.URL.Path, "/air/keys/")
	if kid, ok := strings.CutSuffix(id, "/regenerate"); ok {
		return a.handleRegenerate(w, r, s, kid)
	}
	var k *keys.Key
	switch r.Method {
	case http.MethodDelete:
		k, err = s.Keys.Revoke(r.Context(), id)
	case http.MethodPatch:
		var c keys.Change
		if err := a.decodeBody(w, r, &c, true, "key change"); err != nil {
			return err
		}
		k, err = s.Keys.Update(r.Context(), id, c)
		if err != nil && !errors.Is(err, keys.ErrNoSuchKey) {
			return apiErr(http.StatusBadRequest, err)
		}
	default:
		return notAllowed(r)
	}
	if errors.Is(err, keys.ErrNoSuchKey) {
		return apiErr(http.StatusNotFound, fmt.Errorf("no key with id %q", id))
	}
	if err != nil {
		return apiErr(http.StatusInternalServerError, err)
	}
	return writeJSON(w, http.StatusOK, k)
}

// handleRegenerate answers POST /air/keys/<id>/regenerate: the key with
// its new secret (shown once), as a create answers.
func (a API) handleRegenerate(w http.ResponseWriter, r *http.Request, s *Services, id string) error {
	if r.Method != http.MethodPost {
		return notAllowed(r)
	}
	var req RegenerateRequest
	if r.ContentLength != 0 {
		if err := a.decodeBody(w, r, &req, true, "regenerate request"); err != nil {
			return err
		}
	}
	var grace time.Duration
	if req.Grace != "" {
		d, err := a.parseDuration(req.Grace)
		if err != nil {
			return apiErr(http.StatusBadRequest, fmt.Errorf("grace: bad duration %q", req.Grace))
		}
		grace = d
	}
	secret, k, err := s.Keys.Regenerate(r.Context(), id, grace)
	switch {
	case errors.Is(err, keys.ErrNoSuchKey):
		return apiErr(http.StatusNotFound, fmt.Errorf("no key with id %q", id))
	case errors.Is(err, keys.ErrRevoked):
		return apiErr(http.StatusConflict, fmt.Errorf("key %s is revoked: create a new one", id))
	case errors.Is(err, keys.ErrBadGrace):
		return apiErr(http.StatusBadRequest, err)
	case err != nil:
		return apiErr(http.StatusInternalServerError, err)
	}
	return writeJSON(w, http.StatusOK, CreateKeyResponse{Key: k, Secret: secret})
}
