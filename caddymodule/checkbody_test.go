package caddymodule

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
)

// TestCheckBody checks the body policy of the handlers outside the
// exchange pipeline: JSON, a multipart form on a file upload, anything
// behind an air_auth with any_body; anything else is 415.
func TestCheckBody(t *testing.T) {
	for i, tc := range []struct {
		path, ct string
		anyBody  bool
		ok       bool
	}{
		{"/v1/tasks", "application/json", false, true},
		{"/v1/tasks", "text/plain", false, false},
		{"/v1/images/generations", "multipart/form-data; boundary=x", false, false},
		{"/v1/files", "multipart/form-data; boundary=x", false, true},
		{"/openai/uploads", "application/octet-stream", false, false},
		{"/openai/uploads", "application/octet-stream", true, true},
	} {
		r := httptest.NewRequest(http.MethodPost, tc.path, strings.NewReader("x"))
		r.Header.Set("Content-Type", tc.ct)
		vars := map[string]any{}
		if tc.anyBody {
			vars[varAnyBody] = true
		}
		r = r.WithContext(context.WithValue(r.Context(), caddyhttp.VarsCtxKey, vars))
		e := checkBody(r)
		if (e == nil) != tc.ok || e != nil && e.Status != http.StatusUnsupportedMediaType {
			t.Errorf("Test %d: %s %s any_body %v: %v, want ok %v", i, tc.path, tc.ct, tc.anyBody, e, tc.ok)
		}
	}
}
