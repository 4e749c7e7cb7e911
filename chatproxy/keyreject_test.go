package chatproxy

import (
	"context"
	"github.com/caddy-air/caddy-air/dialect"
	"github.com/caddy-air/caddy-air/dialect/anthropic"
	"github.com/caddy-air/caddy-air/dialect/openai"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// A 403 refuses one request (a model the provider's project may not use):
// it goes back to that client, scrubbed, without trying the provider's
// other keys and without taking any key out of rotation; a 401 or 402 is
// about the key, which leaves rotation while the request moves on.
func TestForbiddenStaysWithItsRequest(t *testing.T) {
	const denied = `{"error":{"message":"Project proj_Q1w2E3r4T5y6 in organization org-Z9x8C7v6B5n4 does not have access to model gpt-5","type":"invalid_request_error","param":null,"code":"model_not_found"}}`
	body := `{"model":"m","messages":[{"role":"user","content":"x"}]}`
	for i, proto := range []dialect.Wire{openai.Wire, anthropic.Wire} {
		// One upstream: before, its key left rotation and both requests
		// got 503 upstream_unavailable.
		bad := newUpstream(t, answer(403, "application/json", denied))
		prov := provider("openai", 0, bad.URL)
		p := &Proxy{}
		for n := 1; n <= 2; n++ {
			rec := httptest.NewRecorder()
			res := serveAll(p, rec, clientRequest(context.Background(), body), chatCall(t, proto, prov, body, ""))
			b := rec.Body.String()
			if rec.Code != 403 || res.Attempts != 1 || bad.count() != n {
				t.Fatalf("Test %d: request %d: %d %s after %d attempts, %d hits; want the 403, once", i, n, rec.Code, b, res.Attempts, bad.count())
			}
			if strings.Contains(b, "proj_") || strings.Contains(b, "org-") ||
				gjson.Get(b, "error.message").Str != "Project [redacted] in organization [redacted] does not have access to model gpt-5" {
				t.Errorf("Test %d: client body %s", i, b)
			}
			if shape := gjson.Get(b, "type").Str; (proto == anthropic.Wire) != (shape == "error") {
				t.Errorf("Test %d: not in the client's shape: %s", i, b)
			}
		}
	}
	for i, status := range []int{401, 402} {
		// Two upstreams: the rejected key is called once, its request
		// moves on to the other, and it is not called again.
		bad := newUpstream(t, answer(status, "application/json", denied))
		good := newUpstream(t, answer(200, "application/json", chatJSON))
		prov := provider("openai", 0, bad.URL, good.URL)
		p := &Proxy{}
		for n := 0; n < 40; n++ {
			rec := httptest.NewRecorder()
			serveAll(p, rec, clientRequest(context.Background(), body), chatCall(t, openai.Wire, prov, body, ""))
			if rec.Code != 200 {
				t.Fatalf("Test %d: request %d got %d %s", i, n, rec.Code, rec.Body.String())
			}
		}
		if bad.count() != 1 {
			t.Errorf("Test %d: the key answered %d was called %d times in 40 requests, want once", i, status, bad.count())
		}
	}
}
