package routing

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/caddy-air/caddy-air/providers"
)

// TestCheckProviderProbesEveryUpstream: a round of health checks probes
// every base URL × key of the provider (base URLs without their trailing
// slash, each probe bounded by the check's timeout), and an upstream
// whose probe failed leaves rotation until one passes. How a probe
// authenticates and sends is upstream's (upstream.Prober).
func TestCheckProviderProbesEveryUpstream(t *testing.T) {
	p := &providers.Provider{Name: "p", Protocol: "openai", BaseURLs: []string{"https://a.example/v1/", "https://b.example/v1"}, APIKeys: []string{"k0", "k1"}}
	tbl, err := providers.NewTable([]*providers.Provider{p}, []*providers.Route{{Pattern: "m", Provider: p}})
	if err != nil {
		t.Fatal(err)
	}
	r := New(Config{Table: tbl, Options: map[string]Options{"p": {HealthCheck: &HealthCheck{}}}})
	var mu sync.Mutex
	var probed []string
	failing := "https://b.example/v1 k1"
	probe := func(ctx context.Context, pp *providers.Provider, a providers.Attempt, path string) bool {
		_, bounded := ctx.Deadline()
		mu.Lock()
		defer mu.Unlock()
		probed = append(probed, a.BaseURL+" "+a.APIKey)
		if pp != p || path != "/models" || !bounded {
			t.Errorf("probe of %s %q, bounded %t", pp.Name, path, bounded)
		}
		return a.BaseURL+" "+a.APIKey != failing
	}
	r.CheckProvider(context.Background(), probe, "p", HealthCheck{Path: "/models", Timeout: DefaultHealthTimeout})
	want := []string{"https://a.example/v1 k0", "https://a.example/v1 k1", "https://b.example/v1 k0", "https://b.example/v1 k1"}
	if !slices.Equal(probed, want) {
		t.Fatalf("probed %q, want %q", probed, want)
	}
	out := 0
	for _, st := range r.Status() {
		if !st.Available {
			out++
			if st.Reason != "health_check" || st.Key != 1 {
				t.Errorf("out of rotation: %+v", st)
			}
		}
	}
	if out != 1 {
		t.Errorf("%d upstreams out of rotation, want the one that failed its check", out)
	}
	failing = ""
	r.CheckProvider(context.Background(), probe, "p", HealthCheck{Path: "/models", Timeout: DefaultHealthTimeout})
	for _, st := range r.Status() {
		if !st.Available {
			t.Errorf("still out after passing its check: %+v", st)
		}
	}
}
