package caddymodule

import (
	"net/http/httptest"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/caddy-air/caddy-air/gateway"
	"github.com/caddy-air/caddy-air/keys"
)

// TestMissingKeyMessageNamesTheClientsHeader: a client of /v1/messages
// (Anthropic's SDKs) is told to send x-api-key, a client of the OpenAI
// endpoints the Authorization header.
func TestMissingKeyMessageNamesTheClientsHeader(t *testing.T) {
	h := &Auth{log: zap.NewNop()}
	for _, tc := range []struct{ path, want, not string }{
		{"/v1/messages", "x-api-key: sk-air-", "Bearer"},
		{"/v1/messages/count_tokens", "x-api-key: sk-air-", "Bearer"},
		{"/v1/chat/completions", "Authorization: Bearer sk-air-", "x-api-key"},
	} {
		rec := httptest.NewRecorder()
		_ = h.reject(rec, httptest.NewRequest("POST", tc.path, nil), keys.ErrMissing)
		body := rec.Body.String()
		if rec.Code != 401 || !strings.Contains(body, tc.want) || strings.Contains(body, tc.not) {
			t.Errorf("%s: %d %s, want 401 naming %q", tc.path, rec.Code, body, tc.want)
		}
	}
}

func TestWithArticle(t *testing.T) {
	for kind, want := range map[string]string{"embedding": "an embedding", "chat": "a chat", "image": "an image", "video": "a video", "messages": "a messages"} {
		if got := gateway.WithArticle(kind); got != want {
			t.Errorf("gateway.WithArticle(%q) = %q, want %q", kind, got, want)
		}
	}
}
