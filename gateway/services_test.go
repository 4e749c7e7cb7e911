package gateway

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/caddy-air/caddy-air/billing"
	"github.com/caddy-air/caddy-air/providers"
	"github.com/caddy-air/caddy-air/routing"
)

// servicesConfig is a config with no providers and no prices.
func servicesConfig(t *testing.T) Config {
	t.Helper()
	routes, err := providers.NewTable(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	prices, err := billing.ParsePrices("prices.json", []byte(`{"models":{}}`))
	if err != nil {
		t.Fatal(err)
	}
	return Config{Prices: prices, Routes: routes, Router: routing.New(routing.Config{Table: routes})}
}

// settleGoroutines waits, within a bound, until at most n goroutines run,
// and returns how many do.
func settleGoroutines(n int) int {
	deadline := time.Now().Add(5 * time.Second)
	for {
		got := runtime.NumGoroutine()
		if got <= n || time.Now().After(deadline) {
			return got
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestServicesStartStop starts a config's services and stops them:
// every background goroutine (the pollers, the health checks, the
// config's Watch) runs on the Shared the services were built on, and
// none is left once Stop returns, so that a reload does not pile up
// pollers on the store.
func TestServicesStartStop(t *testing.T) {
	sh := openShared(t, t.Name())
	c := servicesConfig(t)
	watched := make(chan *Shared, 1)
	watchEnded := make(chan struct{})
	c.Watch = func(ctx context.Context, got *Shared) {
		defer close(watchEnded)
		watched <- got
		<-ctx.Done()
	}
	before := runtime.NumGoroutine()
	for round := range 3 { // as a config reloaded on the same storage, thrice
		s, err := NewServices(sh, c)
		if err != nil {
			t.Fatal(err)
		}
		if s.Shared() != sh || s.Billing == nil || s.Tasks == nil || s.Batches == nil || s.Responses == nil {
			t.Fatalf("round %d: services built incompletely: %+v", round, s)
		}
		s.Start()
		if got := <-watched; got != sh {
			t.Fatalf("round %d: Watch runs on %p, want the Shared %p", round, got, sh)
		}
		if running := runtime.NumGoroutine(); running <= before {
			t.Fatalf("round %d: %d goroutines run after Start, no more than the %d before", round, running, before)
		}
		s.Stop()
		select {
		case <-watchEnded:
		default:
			t.Fatalf("round %d: Watch still runs after Stop returned", round)
		}
		if got := settleGoroutines(before); got > before {
			buf := make([]byte, 1<<16)
			t.Fatalf("round %d: %d goroutines after Stop, %d before Start:\n%s", round, got, before, buf[:runtime.Stack(buf, true)])
		}
		s.Stop() // a second Stop (Caddy may stop twice) is harmless
		watchEnded = make(chan struct{})
	}
	(&Services{}).Stop() // services that never started stop at once
}
