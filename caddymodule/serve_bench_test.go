package caddymodule

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"go.uber.org/zap"

	"github.com/caddy-air/caddy-air/keys"
)

// benchChatAnswer is the upstream's answer to every benchmarked request.
const benchChatAnswer = `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"hello there"},"finish_reason":"stop"}],"usage":{"prompt_tokens":9,"completion_tokens":3,"total_tokens":12}}`

// benchChatStream is the upstream's streamed answer.
const benchChatStream = "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hello\"}}]}\n\n" +
	"data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":3,\"total_tokens\":12}}\n\n" +
	"data: [DONE]\n\n"

// BenchmarkServeChat runs chat completions through air_chat's ServeHTTP
// (read, inspect, route, admit, intend, proxy, settle, release) against
// an upstream on loopback, with a started app on a Badger store, and
// reports the handler's allocations per request (the upstream's and the
// client's included).
func BenchmarkServeChat(b *testing.B) {
	for _, bc := range []struct {
		name, body string
	}{
		{"json", `{"model":"m","messages":[{"role":"user","content":"hi"}]}`},
		{"stream", `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`},
	} {
		b.Run(bc.name, func(b *testing.B) {
			h, key := benchChat(b)
			b.ReportAllocs()
			for b.Loop() {
				w := httptest.NewRecorder()
				r := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", strings.NewReader(bc.body))
				r.Header.Set("Content-Type", "application/json")
				vars := map[string]any{varKey: key, varUser: key.User, varKeyID: key.ID}
				r = r.WithContext(context.WithValue(r.Context(), caddyhttp.VarsCtxKey, vars))
				if err := h.ServeHTTP(w, r, nil); err != nil || w.Code != http.StatusOK {
					b.Fatalf("status %d, %v: %s", w.Code, err, w.Body.String())
				}
			}
		})
	}
}

// benchChat starts an app whose model m is served by a loopback upstream,
// and returns its air_chat handler and a key.
func benchChat(b *testing.B) (caddyhttp.MiddlewareHandler, *keys.Key) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if strings.Contains(string(body), `"stream":true`) {
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, benchChatStream)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, benchChatAnswer)
	}))
	b.Cleanup(up.Close)
	ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
	b.Cleanup(cancel)
	a := &App{
		StorageRaw: badgerJSON(b.TempDir()),
		Providers:  []*ProviderConfig{{Name: "p", DialectRaw: dialectJSON("openai"), BaseURLs: []string{up.URL + "/v1"}, APIKeys: []string{"sk-up"}}},
		Models:     []*ModelConfig{{Pattern: "m", Provider: "p"}},
	}
	if err := a.Provision(ctx); err != nil {
		b.Fatal(err)
	}
	if err := a.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = a.Stop(); _ = a.Cleanup() })
	_, key, err := a.current().keys.Create(context.Background(), keys.CreateOptions{User: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	return newChatHandler(b, ctx, a), key
}

// newChatHandler is air_chat set up on a.
func newChatHandler(_ *testing.B, _ caddy.Context, a *App) caddyhttp.MiddlewareHandler {
	h := new(Chat)
	h.setup(a, zap.NewNop(), chatEndpoint)
	return h
}
