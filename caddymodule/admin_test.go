package caddymodule

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2"
)

// serveAdmin serves r with the admin route its path selects, as Caddy's
// admin server picks it, and returns the route's error.
func serveAdmin(w http.ResponseWriter, r *http.Request) error {
	var err error
	mux := http.NewServeMux()
	for _, rt := range (Admin{}).Routes() {
		mux.HandleFunc(rt.Pattern, func(w http.ResponseWriter, r *http.Request) { err = rt.Handler.ServeHTTP(w, r) })
	}
	mux.ServeHTTP(w, r)
	return err
}

// TestDecodeAdminBodyRunningLimit checks that the running config's
// max_json_depth applies to admin bodies.
func TestDecodeAdminBodyRunningLimit(t *testing.T) {
	app, _ := auditTestState(t)
	app.MaxJSONDepth = 2
	r := httptest.NewRequest(http.MethodPost, "/air/keys", strings.NewReader(`{"user":"alice","x":[[1]]}`))
	err := serveAdmin(httptest.NewRecorder(), r)
	var ae caddy.APIError
	if !errors.As(err, &ae) || ae.HTTPStatus != 400 || !strings.Contains(ae.Err.Error(), "limit of 2 levels") {
		t.Errorf("got %v, want 400 naming the limit of 2 levels", err)
	}
}

// TestAdminNotRunning: before an air app runs, or while it starts, the
// admin routes answer 503 with the reason, as a Caddy API error.
func TestAdminNotRunning(t *testing.T) {
	prev := running.Swap(nil)
	defer running.Store(prev)
	for i, tc := range []struct {
		app  *App
		path string
		msg  string
	}{
		{nil, "/air/keys", "the air app is not running: configure a global `air` option"},
		{nil, "/air/prices", "the air app is not running: configure a global `air` option"},
		{&App{live: new(live)}, "/air/usage", "the air app is starting"},
	} {
		running.Store(tc.app)
		err := serveAdmin(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, tc.path, nil))
		var ae caddy.APIError
		if !errors.As(err, &ae) || ae.HTTPStatus != http.StatusServiceUnavailable || ae.Err.Error() != tc.msg {
			t.Errorf("Test %d: %v, want 503 %q", i, err, tc.msg)
		}
	}
}
