package airmetrics

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// TestRetainBreakers: a config load that no longer has an upstream
// deletes its breaker series, and keeps the others with their state.
// Before, a removed upstream's open breaker (2) stayed in the scrape, and
// an alert on it fired, until the process restarted.
func TestRetainBreakers(t *testing.T) {
	m := New()
	reg := prometheus.NewRegistry()
	if err := m.Register(reg, false); err != nil {
		t.Fatal(err)
	}
	kept := Upstream{"openai", "openai/gpt", "https://api.openai.com/v1", 0}
	removed := Upstream{"old", "old/gpt", "https://old.example/v1", 1}
	m.BreakerState(kept.Provider, kept.Deployment, kept.BaseURL, kept.Key, 1)
	m.BreakerState(removed.Provider, removed.Deployment, removed.BaseURL, removed.Key, 2)
	m.RetainBreakers([]Upstream{kept})

	fams := gather(t, reg)
	mf := fams["air_upstream_breaker_state"]
	if mf == nil || len(mf.GetMetric()) != 1 {
		t.Fatalf("breaker series after the reload: %v, want only %v's", mf, kept)
	}
	if got := find(t, fams, "air_upstream_breaker_state", map[string]string{"provider": "openai", "key": "0"}).GetGauge().GetValue(); got != 1 {
		t.Errorf("the kept upstream's state %v, want 1", got)
	}
	// An upstream set again after being dropped is back.
	m.BreakerState(removed.Provider, removed.Deployment, removed.BaseURL, removed.Key, 0)
	if n := len(gather(t, reg)["air_upstream_breaker_state"].GetMetric()); n != 2 {
		t.Errorf("%d breaker series, want 2", n)
	}
}
