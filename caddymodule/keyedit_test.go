package caddymodule

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2"

	"github.com/caddy-air/caddy-air/keys"
)

// TestAdminPatchKey changes a key's models and expiry through PATCH
// /air/keys/<id>, and the key authenticates with the new scope at once.
func TestAdminPatchKey(t *testing.T) {
	a := startedApp(t)
	st := a.current()
	secret, k, err := st.keys.Create(t.Context(), keys.CreateOptions{User: "pat", Name: "ci", Models: []string{"gpt-4o"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.keys.Authenticate(t.Context(), secret); err != nil {
		t.Fatal(err)
	}
	patch := func(id, body string) (*httptest.ResponseRecorder, error) {
		w := httptest.NewRecorder()
		return w, serveAdmin(w, httptest.NewRequest(http.MethodPatch, "/air/keys/"+id, strings.NewReader(body)))
	}
	w, err := patch(k.ID, `{"models":["claude-*"],"expires_at":"2099-01-01T00:00:00Z"}`)
	if err != nil {
		t.Fatal(err)
	}
	var got keys.Key
	if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil || got.Name != "ci" || strings.Join(got.Models, ",") != "claude-*" || got.ExpiresAt == nil {
		t.Fatalf("PATCH answered %s (%v)", w.Body, err)
	}
	if ak, err := st.keys.Authenticate(t.Context(), secret); err != nil || strings.Join(ak.Models, ",") != "claude-*" {
		t.Errorf("the next request sees %+v, %v", ak, err)
	}
	for i, tc := range []struct {
		id, body string
		status   int
	}{
		{k.ID, `{"models":["gpt-["]}`, http.StatusBadRequest},
		{k.ID, `{"model":["x"]}`, http.StatusBadRequest}, // unknown field
		{k.ID, `{"expires_at":"2001-01-01T00:00:00Z"}`, http.StatusBadRequest},
		{"key_missing", `{"name":"x"}`, http.StatusNotFound},
	} {
		_, err := patch(tc.id, tc.body)
		var ae caddy.APIError
		if !errors.As(err, &ae) || ae.HTTPStatus != tc.status {
			t.Errorf("Test %d: %v, want %d", i, err, tc.status)
		}
	}
}
