package caddymodule

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"github.com/tidwall/gjson"

	"github.com/caddy-air/caddy-air/apierror"
	"github.com/caddy-air/caddy-air/reqbody"
	"github.com/caddy-air/caddy-air/store"
)

func TestRespondError(t *testing.T) {
	for i, tc := range []struct {
		path, errType string
		err           error
		status        int
	}{
		{"/v1/chat/completions", "invalid_request_error", apierror.Unauthorized("invalid API key"), 401},
		{"/v1/messages", "authentication_error", apierror.Unauthorized("invalid API key"), 401},
		{"/v1/tasks", "invalid_request_error", apierror.NotFound("model_not_found", "no such model"), 404},
		{"/v1/messages", "not_found_error", apierror.NotFound("model_not_found", "no such model"), 404},
		{"/v1/messages", "overloaded_error", reqbody.ErrBusy, 503},
		{"/v1/tasks", "server_error", errors.New("disk on fire"), 500},
		{"/v1/messages", "api_error", errors.New("disk on fire"), 500},
		{"/v1/tasks", "server_error", fmt.Errorf("creating a task: %w: disk on fire", store.ErrStorageFull), 507},
		{"/v1/messages", "api_error", fmt.Errorf("%w: disk on fire", store.ErrStorageFull), 507},
	} {
		rec := httptest.NewRecorder()
		err := respondError(rec, httptest.NewRequest(http.MethodPost, tc.path, nil), tc.err)
		var he caddyhttp.HandlerError
		if !errors.As(err, &he) || he.StatusCode != tc.status || !errors.Is(err, tc.err) {
			t.Errorf("Test %d: returned %#v, want a HandlerError with status %d wrapping %v", i, err, tc.status, tc.err)
		}
		if rec.Code != tc.status || rec.Header().Get("Content-Type") != "application/json" {
			t.Errorf("Test %d: answered %d %q", i, rec.Code, rec.Header().Get("Content-Type"))
		}
		body := rec.Body.String()
		typ := gjson.Get(body, "error.type").Str
		if anthropicShaped(httptest.NewRequest(http.MethodGet, tc.path, nil)) && gjson.Get(body, "type").Str != "error" {
			t.Errorf("Test %d: %s is not in Anthropic's shape", i, body)
		}
		if typ != tc.errType {
			t.Errorf("Test %d: error type %q, want %q: %s", i, typ, tc.errType, body)
		}
		if tc.status == 507 && (gjson.Get(body, "error.code").Str != "storage_full" && gjson.Get(body, "type").Str != "error" || rec.Header().Get("Retry-After") == "") {
			t.Errorf("Test %d: a full store's refusal is not storage_full with Retry-After: %s", i, body)
		}
		if strings.Contains(body, "disk on fire") {
			t.Errorf("Test %d: the body reveals an internal error: %s", i, body)
		}
	}
}
