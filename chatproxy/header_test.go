package chatproxy

import (
	"cmp"
	"context"
	"github.com/caddy-air/caddy-air/dialect"
	"github.com/caddy-air/caddy-air/dialect/anthropic"
	"github.com/caddy-air/caddy-air/dialect/openai"
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestAccountHeadersDropped checks that the upstream headers naming the
// operator's provider account never reach clients, on every path an
// answer takes (held JSON, a stream, a kept failure), while the headers
// clients use still do.
func TestAccountHeadersDropped(t *testing.T) {
	upstreamHeaders := []string{
		"Openai-Organization", "org-operator", "Openai-Project", "proj_operator", "Anthropic-Organization-Id", "0c5a-operator",
		"X-Request-Id", "up-1", "Request-Id", "req_up", "Openai-Processing-Ms", "12", "Openai-Version", "2020-10-01",
		"X-Ratelimit-Remaining-Requests", "99", "Anthropic-Ratelimit-Requests-Remaining", "49", "Retry-After", "7",
	}
	withHeaders := func(h func(http.ResponseWriter, *http.Request)) func(http.ResponseWriter, *http.Request) {
		return func(w http.ResponseWriter, r *http.Request) {
			for i := 0; i+1 < len(upstreamHeaders); i += 2 {
				w.Header().Set(upstreamHeaders[i], upstreamHeaders[i+1])
			}
			h(w, r)
		}
	}
	openAIStream := chunk(`[{"index":0,"delta":{"content":"a"}}]`, "") + "data: [DONE]\n\n"
	for _, tc := range []struct {
		name     string
		proto    dialect.Wire
		protocol string
		body     string
		upstream func(http.ResponseWriter, *http.Request)
		urls     int
		status   int
	}{
		{"chat JSON", openai.Wire, "openai", `{"model":"m","messages":[{"role":"user","content":"hi"}]}`, answer(200, "application/json", chatJSON), 1, 200},
		{"chat stream", openai.Wire, "openai", `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`, sseAnswer([]string{openAIStream}), 1, 200},
		{"messages JSON", anthropic.Wire, "anthropic", `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`, answer(200, "application/json", anthropicJSON), 1, 200},
		{"a failure kept over a retry", openai.Wire, "openai", `{"model":"m","messages":[{"role":"user","content":"hi"}]}`, answer(429, "application/json", `{"error":{"message":"slow down"}}`), 2, 429},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := newUpstream(t, withHeaders(tc.upstream))
			urls := make([]string, tc.urls)
			for i := range urls {
				urls[i] = up.URL + "/v1"
			}
			c := chatCall(t, tc.proto, provider(tc.protocol, 0, urls...), tc.body, "")
			rec := httptest.NewRecorder()
			serveAll(&Proxy{}, rec, clientRequest(context.Background(), tc.body), c)
			if rec.Code != tc.status || up.count() != tc.urls {
				t.Fatalf("status %d after %d attempts, want %d after %d", rec.Code, up.count(), tc.status, tc.urls)
			}
			for _, k := range []string{"Openai-Organization", "Openai-Project", "Anthropic-Organization-Id"} {
				if v := rec.Header().Get(k); v != "" {
					t.Errorf("the client got %s: %s", k, v)
				}
			}
			// The provider's request ids are renamed: X-Request-Id and
			// Request-Id are the gateway's.
			renamed := map[string]string{"X-Request-Id": "X-Upstream-Request-Id", "Request-Id": "Upstream-Request-Id"}
			for i := 6; i+1 < len(upstreamHeaders); i += 2 {
				name := cmp.Or(renamed[upstreamHeaders[i]], upstreamHeaders[i])
				if got := rec.Header().Get(name); got != upstreamHeaders[i+1] {
					t.Errorf("the client got %s %q, want %q", name, got, upstreamHeaders[i+1])
				}
			}
			for k := range renamed {
				if v := rec.Header().Get(k); v != "" {
					t.Errorf("the provider's %s reached the client as %s: %s", k, k, v)
				}
			}
		})
	}
}
