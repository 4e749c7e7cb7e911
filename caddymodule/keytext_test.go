package caddymodule

import (
	"bytes"
	"encoding/json"
	"errors"
	"html"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2"

	"github.com/caddy-air/caddy-air/console"
	"github.com/caddy-air/caddy-air/keys"
)

// unsafeName is a key name that retitles a terminal, clears it and
// turns its text red.
const unsafeName = "ok\x1b]0;pwned\a\x1b[2J\x1b[31mRED"

func TestAdminKeysRefusesUnsafeText(t *testing.T) {
	startedApp(t)
	for _, tc := range []struct {
		name, user, keyName, wantField string
	}{
		{"escape sequences in the name", "alice", unsafeName, "name"},
		{"a name of 5000 characters", "alice", strings.Repeat("n", 5000), "name"},
		{"NUL in the user", "ali\x00ce", "ci", "user"},
		{"a C1 control in the user", "ali\u009bce", "ci", "user"},
		{"a user id of 257 characters", strings.Repeat("u", 257), "ci", "user"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body, _ := json.Marshal(keys.CreateOptions{User: tc.user, Name: tc.keyName})
			r := httptest.NewRequest(http.MethodPost, "/air/keys", bytes.NewReader(body))
			w := httptest.NewRecorder()
			err := serveAdmin(w, r)
			var ae caddy.APIError
			if !errors.As(err, &ae) || ae.HTTPStatus != http.StatusBadRequest || !strings.HasPrefix(ae.Err.Error(), tc.wantField+": ") {
				t.Fatalf("POST /air/keys: %v (status %d), want a 400 naming %s", err, ae.HTTPStatus, tc.wantField)
			}
		})
	}
	w := httptest.NewRecorder()
	if err := serveAdmin(w, httptest.NewRequest(http.MethodGet, "/air/keys", nil)); err != nil || strings.TrimSpace(w.Body.String()) != "[]" {
		t.Errorf("keys after the refusals: %s, %v", w.Body, err)
	}
}

func TestConsoleRefusesUnsafeKeyName(t *testing.T) {
	svc := consoleServices{app: startedApp(t)}
	h, err := console.New(console.Config{Prefix: "/console", CSRFKey: bytes.Repeat([]byte("k"), 32),
		Services: console.Services{Keys: svc, Usage: svc}})
	if err != nil {
		t.Fatal(err)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "http://gw.example/console/keys", nil), "bob")
	m := regexp.MustCompile(`name="csrf_token" value="([^"]+)"`).FindStringSubmatch(w.Body.String())
	if m == nil {
		t.Fatalf("no CSRF token on the keys page:\n%s", w.Body)
	}
	ft := regexp.MustCompile(`name="form_token" value="([^"]+)"`).FindStringSubmatch(w.Body.String())
	if ft == nil {
		t.Fatalf("no one-time form token on the keys page:\n%s", w.Body)
	}
	form := url.Values{"csrf_token": {m[1]}, "form_token": {ft[1]}, "name": {unsafeName}}
	r := httptest.NewRequest(http.MethodPost, "http://gw.example/console/keys", strings.NewReader(form.Encode()))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	r.Header.Set("Origin", "http://gw.example")
	r.Header.Set("Sec-Fetch-Site", "same-origin")
	w = httptest.NewRecorder()
	h.ServeHTTP(w, r, "bob")
	if w.Code != http.StatusBadRequest || !strings.Contains(html.UnescapeString(w.Body.String()), "name: holds the control character U+001B") {
		t.Fatalf("creating a key named with escapes: %d, want a 400 naming the field:\n%s", w.Code, w.Body)
	}
	if list, err := svc.List(t.Context(), "bob"); err != nil || len(list) != 0 {
		t.Errorf("bob's keys after the refusal: %+v, %v", list, err)
	}
}
