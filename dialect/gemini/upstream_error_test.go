package gemini

import (
	"testing"

	"github.com/tidwall/gjson"

	"github.com/caddy-air/caddy-air/apierror"
)

// TestUpstreamErrorBody checks that a Google error body reaches a client
// through apierror.UpstreamBody with its status as the code, whether
// whole or inside a one-element array, and scrubbed.
func TestUpstreamErrorBody(t *testing.T) {
	for i, tc := range []struct {
		status int
		body   string
		// code and message are the client's error.code and error.message.
		code, message string
	}{
		{400, `[{"error":{"code":400,"message":"API key not valid","status":"INVALID_ARGUMENT"}}]`, "INVALID_ARGUMENT", "API key not valid"},
		{429, `{"error":{"code":429,"message":"Quota exceeded for key AIzaSyA-0123456789abcdefghij","status":"RESOURCE_EXHAUSTED"}}`, "RESOURCE_EXHAUSTED", "Quota exceeded for key [redacted]"},
		// A code of its own, not the HTTP status, is kept.
		{400, `{"error":{"code":"BAD_KEY","message":"no","status":"INVALID_ARGUMENT"}}`, "BAD_KEY", "no"},
		// Not Google's: the generic reading.
		{403, `{"error":{"message":"no access","type":"permission_error","code":"denied"}}`, "denied", "no access"},
	} {
		got := apierror.UpstreamBody(tc.status, []byte(tc.body), apierror.ShapeOpenAI)
		if c, m := gjson.GetBytes(got, "error.code").String(), gjson.GetBytes(got, "error.message").Str; c != tc.code || m != tc.message {
			t.Errorf("Test %d: code %q, message %q, want %q, %q (body %s)", i, c, m, tc.code, tc.message, got)
		}
	}
}
