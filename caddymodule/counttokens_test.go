package caddymodule

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/caddy-air/caddy-air/caddymodule/airmod"
	geminimod "github.com/caddy-air/caddy-air/caddymodule/dialects/gemini"
	"github.com/caddy-air/caddy-air/gateway"

	"go.uber.org/zap"

	"github.com/caddy-air/caddy-air/apierror"
	"github.com/caddy-air/caddy-air/chatproxy"
	"github.com/caddy-air/caddy-air/dialect"
	"github.com/caddy-air/caddy-air/dialect/translate"
	"github.com/caddy-air/caddy-air/providers"
	"github.com/caddy-air/caddy-air/routing"
	"github.com/caddy-air/caddy-air/upstream"
)

// fakeCount is a Google AI Studio countTokens: it answers each key with
// the status set for it (200 with a count by default) and records the
// keys it was asked with.
type fakeCount struct {
	mu     sync.Mutex
	status map[string]int
	keys   []string
}

func (f *fakeCount) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	key := r.Header.Get("X-Goog-Api-Key")
	f.mu.Lock()
	f.keys = append(f.keys, key)
	status := f.status[key]
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if !strings.HasSuffix(r.URL.Path, ":countTokens") {
		status = http.StatusNotFound
	}
	switch status {
	case 0, http.StatusOK:
		_, _ = w.Write([]byte(`{"totalTokens":7}`))
	default:
		w.WriteHeader(status)
		_, _ = w.Write([]byte(`{"error":{"code":` + strconv.Itoa(status) + `,"message":"refused","status":"X"}}`))
	}
}

func (f *fakeCount) asked() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.keys...)
}

// countEnv is a handler counting for model "gem" (provider g, keys k1
// and k2), whose fallback "gem-b" is on provider b.
func countEnv(t *testing.T, g, b *fakeCount) (*proxyHandler, *providers.Route) {
	t.Helper()
	gs, bs := httptest.NewServer(g), httptest.NewServer(b)
	t.Cleanup(gs.Close)
	t.Cleanup(bs.Close)
	gp := &providers.Provider{Name: "g", Protocol: providers.ProtocolGemini, BaseURLs: []string{gs.URL}, APIKeys: []string{"k1", "k2"}}
	bp := &providers.Provider{Name: "b", Protocol: providers.ProtocolGemini, BaseURLs: []string{bs.URL}, APIKeys: []string{"kb"}}
	for _, p := range []*providers.Provider{gp, bp} {
		if err := (geminimod.Gemini{}).Setup(p, airmod.SetupOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	route := &providers.Route{Pattern: "gem", Kind: providers.KindChat, Provider: gp, UpstreamModel: "gemini-2.5-flash", Fallbacks: []string{"gem-b"},
		Policy: providers.PolicyRoundRobin}
	fb := &providers.Route{Pattern: "gem-b", Kind: providers.KindChat, Provider: bp}
	table, err := providers.NewTable([]*providers.Provider{gp, bp}, []*providers.Route{route, fb})
	if err != nil {
		t.Fatal(err)
	}
	app := &App{cfg: gateway.Config{Router: routing.New(routing.Config{Table: table, MaxWait: -1}), Transport: http.DefaultTransport}}
	return &proxyHandler{app: app, proxy: &chatproxy.Proxy{}, log: zap.NewNop()}, route
}

// TestCountGoogleRoutes: a count is one attempt to the router's first
// target among the model's own deployments: a key the router took out of
// rotation is passed over, a provider's failure is not retried elsewhere,
// a fallback is never asked, and a countTokens 429 does not cool the
// upstream down for the model's other requests.
func TestCountGoogleRoutes(t *testing.T) {
	count := func(h *proxyHandler, route *providers.Route) (int64, error) {
		return gateway.TokenCounter{Config: &h.app.cfg}.CountUpstream(context.Background(), h.proxy, h.log, upstream.Spec{Operation: "count_tokens", Model: "gem"},
			[]byte(`{"model":"gem","max_tokens":1,"messages":[{"role":"user","content":"Hello"}]}`), translate.Gemini, translate.CounterOf(translate.Gemini), route)
	}
	status := func(err error) int {
		var de *dialect.Error
		var ae *apierror.Error
		switch {
		case errors.As(err, &de):
			return de.Status
		case errors.As(err, &ae):
			return ae.Status
		}
		return 0
	}

	// k1 is revoked: its 401 is the gateway's 502, and takes k1 out of
	// rotation; the counts after it go to k2.
	g, b := &fakeCount{status: map[string]int{"k1": 401}}, &fakeCount{}
	h, route := countEnv(t, g, b)
	var got []int
	for range 4 {
		n, err := count(h, route)
		if err == nil && n != 7 {
			t.Fatalf("counted %d, want 7", n)
		}
		got = append(got, status(err))
	}
	if asked := g.asked(); got[0] != http.StatusBadGateway || got[1] != 0 || got[2] != 0 || got[3] != 0 || asked[0] != "k1" ||
		len(asked) != 4 || asked[1] != "k2" || asked[2] != "k2" || asked[3] != "k2" {
		t.Errorf("counts with a revoked k1: errors %v, keys %v; want one 502 from k1, then k2", got, asked)
	}

	// Both keys refused: the model's own deployment has no upstream left,
	// and the fallback is not asked for another model's count.
	g, b = &fakeCount{status: map[string]int{"k1": 401, "k2": 401}}, &fakeCount{}
	h, route = countEnv(t, g, b)
	var last error
	for range 3 {
		_, last = count(h, route)
	}
	var ae *apierror.Error
	if !errors.As(last, &ae) || ae.Status != http.StatusServiceUnavailable || ae.RetryAfter < 1 || len(b.asked()) != 0 || len(g.asked()) != 2 {
		t.Errorf("no own upstream left: %v, the fallback asked %d times, the model's provider %d; want a 503 with Retry-After, none, 2", last, len(b.asked()), len(g.asked()))
	}

	// A 500 is the provider's answer, passed on, after one attempt.
	g, b = &fakeCount{status: map[string]int{"k1": 500, "k2": 500}}, &fakeCount{}
	h, route = countEnv(t, g, b)
	if _, err := count(h, route); status(err) != http.StatusInternalServerError || len(g.asked()) != 1 || len(b.asked()) != 0 {
		t.Errorf("a 500: %v after %d attempts (fallback %d); want the 500 after one", err, len(g.asked()), len(b.asked()))
	}

	// A countTokens 429 is passed on, and leaves both keys in rotation.
	g, b = &fakeCount{status: map[string]int{"k1": 429, "k2": 429}}, &fakeCount{}
	h, route = countEnv(t, g, b)
	for i := range 2 {
		if _, err := count(h, route); status(err) != http.StatusTooManyRequests {
			t.Fatalf("count %d: %v, want the 429", i, err)
		}
	}
	g.mu.Lock()
	g.status = nil
	g.mu.Unlock()
	if n, err := count(h, route); err != nil || n != 7 || len(b.asked()) != 0 {
		t.Errorf("after two 429s: %d, %v (fallback asked %d times); want the model's own count", n, err, len(b.asked()))
	}
}
