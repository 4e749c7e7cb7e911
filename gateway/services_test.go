package gateway

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/caddy-air/caddy-air/alerts"
	"github.com/caddy-air/caddy-air/billing"
	"github.com/caddy-air/caddy-air/keys"
	"github.com/caddy-air/caddy-air/providers"
	"github.com/caddy-air/caddy-air/routing"
	"github.com/caddy-air/caddy-air/store"
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

// waitGoroutines waits, within a bound, until the number of goroutines
// running satisfies ok, and returns it.
func waitGoroutines(ok func(n int) bool) int {
	deadline := time.Now().Add(5 * time.Second)
	for {
		n := runtime.NumGoroutine()
		if ok(n) || time.Now().After(deadline) {
			return n
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestServicesStartStop starts a config's services and stops them, as a
// config reloaded on the same storage thrice: every background goroutine
// (the pollers, the health checks, the alerts) runs on the Shared the
// services were built on, and none is left once Stop returns, so that
// reloads do not pile up pollers on the store.
func TestServicesStartStop(t *testing.T) {
	sh := openShared(t, t.Name())
	soon := time.Now().Add(time.Hour)
	_, k, err := sh.Keys.Create(context.Background(), keys.CreateOptions{User: "alice", ExpiresAt: &soon})
	if err != nil {
		t.Fatal(err)
	}
	c := servicesConfig(t)
	c.AlertInterval, c.KeyExpiryLead, c.Probe = time.Hour, 2*time.Hour, new(Probe)
	before := runtime.NumGoroutine()
	for round := range 3 {
		c.Alerts = alerts.NewDispatcher(alerts.Config{QueueSize: 16})
		s, err := NewServices(sh, c)
		if err != nil {
			t.Fatal(err)
		}
		if s.Shared() != sh || s.Billing == nil || s.Tasks == nil || s.Batches == nil || s.Responses == nil {
			t.Fatalf("round %d: services built incompletely: %+v", round, s)
		}
		s.Start()
		if round == 0 {
			// The alerts check the Shared's keys at once, and store what
			// they raise in its outbox.
			if got := waitAlert(t, sh, alerts.KindKeyExpiring); got.Data["key_id"] != k.ID {
				t.Errorf("key_expiring of %q, want %q", got.Data["key_id"], k.ID)
			}
		}
		// The pollers, the health checks and the alerts: more than one.
		if running := waitGoroutines(func(n int) bool { return n > before+1 }); running <= before+1 {
			t.Fatalf("round %d: %d goroutines run after Start, %d before", round, running, before)
		}
		s.Stop()
		if got := waitGoroutines(func(n int) bool { return n <= before }); got > before {
			buf := make([]byte, 1<<16)
			t.Fatalf("round %d: %d goroutines after Stop, %d before Start:\n%s", round, got, before, buf[:runtime.Stack(buf, true)])
		}
		s.Stop() // a second Stop (Caddy may stop twice) is harmless
	}
	(&Services{}).Stop() // services that never started stop at once
}

// waitAlert waits, within a bound, for an alert of kind in sh's outbox.
func waitAlert(t *testing.T, sh *Shared, kind string) store.AlertEvent {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		list, err := sh.Repos.Alerts.Recent(context.Background(), 10)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range list {
			if d.Event.Kind == kind {
				return d.Event
			}
		}
	}
	t.Fatalf("no %s alert in the outbox", kind)
	return store.AlertEvent{}
}
