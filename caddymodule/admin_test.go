package caddymodule

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2"
)

func TestDecodeAdminBody(t *testing.T) {
	for i, tc := range []struct {
		body   string
		strict bool
		status int // 0 when decoded
		msg    string
	}{
		{body: `{"user":"alice","name":"laptop"}`},
		{body: `{"user":"alice","extra":[[1]]}`},
		{body: `{"user":"alice","extra":1}`, strict: true, status: 400, msg: `decoding request: json: unknown field "extra"`},
		{body: strings.Repeat("[", maxAdminBody), status: 400, msg: "decoding request: the request body nests deeper than the limit of 128 levels"},
		{body: `{"user":"alice","x":` + strings.Repeat(`{"a":`, 128) + "1" + strings.Repeat("}", 129), status: 400, msg: "decoding request: the request body nests deeper than the limit of 128 levels"},
		{body: `{"user":"` + strings.Repeat("[", 100_000) + `"}`},
		{body: `{"user":`, status: 400, msg: "decoding request: unexpected EOF"},
		{body: `"` + strings.Repeat("a", maxAdminBody) + `"`, status: 413, msg: "decoding request: the body is larger than 1048576 bytes"},
	} {
		r := httptest.NewRequest(http.MethodPost, "/air/keys", strings.NewReader(tc.body))
		var v struct {
			User string `json:"user"`
			Name string `json:"name"`
		}
		err := decodeAdminBody(httptest.NewRecorder(), r, &v, tc.strict, "request")
		var ae caddy.APIError
		switch {
		case tc.status == 0 && err != nil:
			t.Errorf("Test %d: %v", i, err)
		case tc.status == 0:
		case !errors.As(err, &ae):
			t.Errorf("Test %d: got %v, want an API error %d", i, err, tc.status)
		case ae.HTTPStatus != tc.status || ae.Err.Error() != tc.msg:
			t.Errorf("Test %d: got %d %q, want %d %q", i, ae.HTTPStatus, ae.Err, tc.status, tc.msg)
		}
	}
}

// TestDecodeAdminBodyRunningLimit checks that the running config's
// max_json_depth applies to admin bodies.
func TestDecodeAdminBodyRunningLimit(t *testing.T) {
	prev := running.Swap(&App{MaxJSONDepth: 2})
	defer running.Store(prev)
	r := httptest.NewRequest(http.MethodPost, "/air/keys", strings.NewReader(`{"user":"alice","x":[[1]]}`))
	var v struct{}
	err := decodeAdminBody(httptest.NewRecorder(), r, &v, false, "request")
	var ae caddy.APIError
	if !errors.As(err, &ae) || ae.HTTPStatus != 400 || !strings.Contains(ae.Err.Error(), "limit of 2 levels") {
		t.Errorf("got %v, want 400 naming the limit of 2 levels", err)
	}
}
