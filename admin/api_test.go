package admin

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/caddy-air/caddy-air/refusals"
	"github.com/caddy-air/caddy-air/routing"
	"github.com/caddy-air/caddy-air/store"
)

// fakeGateway is a gateway with no started config, whose bodies nest at
// most depth levels (0: the default).
type fakeGateway struct{ depth int }

func (fakeGateway) Started() (*Services, error)                  { return nil, ErrNotRunning }
func (fakeGateway) Prices() (PricesReport, error)                { return PricesReport{}, ErrNotRunning }
func (fakeGateway) Upstreams() ([]routing.UpstreamStatus, error) { return nil, ErrNotRunning }
func (fakeGateway) Refusals(refusals.Filter) []refusals.Entry    { return []refusals.Entry{} }
func (g fakeGateway) MaxJSONDepth() int                          { return g.depth }

func TestDecodeBody(t *testing.T) {
	for i, tc := range []struct {
		body   string
		strict bool
		depth  int
		status int // 0 when decoded
		msg    string
	}{
		{body: `{"user":"alice","name":"laptop"}`},
		{body: `{"user":"alice","extra":[[1]]}`},
		{body: `{"user":"alice","extra":1}`, strict: true, status: 400, msg: `decoding request: json: unknown field "extra"`},
		{body: strings.Repeat("[", maxBody), status: 400, msg: "decoding request: the request body nests deeper than the limit of 128 levels"},
		{body: `{"user":"alice","x":` + strings.Repeat(`{"a":`, 128) + "1" + strings.Repeat("}", 129), status: 400, msg: "decoding request: the request body nests deeper than the limit of 128 levels"},
		{body: `{"user":"` + strings.Repeat("[", 100_000) + `"}`},
		{body: `{"user":`, status: 400, msg: "decoding request: unexpected EOF"},
		{body: `"` + strings.Repeat("a", maxBody) + `"`, status: 413, msg: "decoding request: the body is larger than 1048576 bytes"},
		// The running config's max_json_depth applies.
		{body: `{"user":"alice","x":[[1]]}`, depth: 2, status: 400, msg: "decoding request: the request body nests deeper than the limit of 2 levels"},
	} {
		r := httptest.NewRequest(http.MethodPost, "/air/keys", strings.NewReader(tc.body))
		var v struct {
			User string `json:"user"`
			Name string `json:"name"`
		}
		err := API{Gateway: fakeGateway{tc.depth}}.decodeBody(httptest.NewRecorder(), r, &v, tc.strict, "request")
		var ae *Error
		switch {
		case tc.status == 0 && err != nil:
			t.Errorf("Test %d: %v", i, err)
		case tc.status == 0:
		case !errors.As(err, &ae):
			t.Errorf("Test %d: got %v, want an API error %d", i, err, tc.status)
		case ae.Status != tc.status || ae.Err.Error() != tc.msg:
			t.Errorf("Test %d: got %d %q, want %d %q", i, ae.Status, ae.Err, tc.status, tc.msg)
		}
	}
}

// TestStorageFull: the admin API answers a write that the store refused
// on a full disk with 507, whatever status the handler chose for other
// errors (key creation answers 400 for a bad key).
func TestStorageFull(t *testing.T) {
	for _, status := range []int{400, 500} {
		if e := apiErr(status, fmt.Errorf("creating a key: %w", store.ErrStorageFull)); e.Status != 507 {
			t.Errorf("apiErr(%d, storage full) = %d, want 507", status, e.Status)
		}
		if e := apiErr(status, errors.New("bad")); e.Status != status {
			t.Errorf("apiErr(%d, other) = %d", status, e.Status)
		}
	}
}

// TestNotStarted: without a started config every route that needs one
// answers 503 with the reason, after refusing a method it does not
// serve, and the routes that need none answer.
func TestNotStarted(t *testing.T) {
	a := API{Gateway: fakeGateway{}}
	mux := http.NewServeMux()
	var err error
	for _, rt := range a.Routes() {
		mux.HandleFunc(rt.Pattern, func(w http.ResponseWriter, r *http.Request) { err = rt.Handler(w, r) })
	}
	for i, tc := range []struct {
		method, path string
		status       int
	}{
		{"GET", "/air/keys", 503},
		{"PUT", "/air/keys", 503}, // the state first, then the method
		{"POST", "/air/usage", 405},
		{"GET", "/air/usage", 503},
		{"GET", "/air/prices", 503},
		{"GET", "/air/providers", 503},
		{"POST", "/air/health", 405},
		{"GET", "/air/teams/red", 503},
		{"POST", "/air/request-logs/x", 405},
		{"GET", "/air/refusals?limit=x", 400},
		{"GET", "/air/refusals", 0},
	} {
		err = nil
		w := httptest.NewRecorder()
		mux.ServeHTTP(w, httptest.NewRequest(tc.method, tc.path, nil))
		var ae *Error
		switch {
		case tc.status == 0 && (err != nil || w.Code != 200 || strings.TrimSpace(w.Body.String()) != "[]"):
			t.Errorf("Test %d: %v %d %s", i, err, w.Code, w.Body)
		case tc.status != 0 && (!errors.As(err, &ae) || ae.Status != tc.status):
			t.Errorf("Test %d: %s %s: %v, want %d", i, tc.method, tc.path, err, tc.status)
		}
	}
}
