package caddymodule

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
)

func TestSignInLimitCaddyfile(t *testing.T) {
	for i, tc := range []struct {
		input string
		want  SignInLimit
		err   bool
	}{
		{"air_signin_limit", SignInLimit{}, false},
		{"air_signin_limit {\n per_ip 3\n per_user 7\n window 10m\n}", SignInLimit{PerIP: 3, PerUser: 7, Window: caddy.Duration(10 * time.Minute)}, false},
		{"air_signin_limit {\n per_ip 0\n}", SignInLimit{}, true},
		{"air_signin_limit {\n window -1s\n}", SignInLimit{}, true},
		{"air_signin_limit {\n burst 3\n}", SignInLimit{}, true},
		{"air_signin_limit extra", SignInLimit{}, true},
	} {
		var h SignInLimit
		err := h.UnmarshalCaddyfile(caddyfile.NewTestDispenser(tc.input))
		if (err != nil) != tc.err {
			t.Errorf("Test %d: error %v, want error %v", i, err, tc.err)
			continue
		}
		if !tc.err && (h.PerIP != tc.want.PerIP || h.PerUser != tc.want.PerUser || h.Window != tc.want.Window) {
			t.Errorf("Test %d: got %+v, want %+v", i, h, tc.want)
		}
	}
}

// The handler counts only refused credentials, answers 429 with
// Retry-After before the next handler (basic_auth) runs, and never
// slows requests without credentials.
func TestSignInLimitServe(t *testing.T) {
	h := SignInLimit{PerIP: 2, PerUser: 100}
	if err := h.Provision(caddy.Context{}); err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1_800_000_000, 0)
	h.now = func() time.Time { return now }
	checks := 0
	auth := caddyhttp.HandlerFunc(func(w http.ResponseWriter, r *http.Request) error {
		checks++
		if _, pw, _ := r.BasicAuth(); pw == "right" {
			return nil
		}
		return caddyhttp.Error(http.StatusUnauthorized, errors.New("not authenticated"))
	})
	serve := func(pw string) (int, string) {
		r := httptest.NewRequest(http.MethodGet, "/console/", nil)
		r.RemoteAddr = "203.0.113.9:5555"
		if pw != "" {
			r.SetBasicAuth("alice", pw)
		}
		w := httptest.NewRecorder()
		err := h.ServeHTTP(w, r, auth)
		var he caddyhttp.HandlerError
		if errors.As(err, &he) {
			return he.StatusCode, w.Header().Get("Retry-After")
		}
		return http.StatusOK, ""
	}
	for range 5 {
		if s, _ := serve("right"); s != http.StatusOK {
			t.Fatalf("a signed-in request: %d", s)
		}
	}
	serve("wrong")
	serve("wrong")
	before := checks
	if s, retry := serve("right"); s != http.StatusTooManyRequests || retry != "30" || checks != before {
		t.Errorf("after 2 failures: %d, Retry-After %q, %d password checks; want 429, 30, none", s, retry, checks-before)
	}
	before = checks
	if s, _ := serve(""); s != http.StatusUnauthorized || checks != before+1 {
		t.Errorf("a request without credentials: %d, want basic_auth's own 401", s)
	}
	now = now.Add(30 * time.Second)
	if s, _ := serve("right"); s != http.StatusOK {
		t.Errorf("30 s later: %d", s)
	}
}
