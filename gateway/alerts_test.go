package gateway

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/caddy-air/caddy-air/alerts"
	"github.com/caddy-air/caddy-air/providers"
	"github.com/caddy-air/caddy-air/routing"
)

func TestLedgerAlertsOnChangeOnly(t *testing.T) {
	var w alertWatch
	now := time.Date(2026, 11, 28, 2, 0, 0, 0, time.UTC)
	var got []string
	for i, down := range []bool{false, false, true, true, true, false, false, true} {
		if e := w.ledger(down, now.Add(time.Duration(i)*time.Second)); e != nil {
			got = append(got, e.Kind)
			if e.Data["instance"] == "" || e.ID == "" {
				t.Errorf("event %+v: want an id and the instance", e)
			}
		}
	}
	if want := "ledger_unavailable,ledger_available,ledger_unavailable"; strings.Join(got, ",") != want {
		t.Errorf("events %v, want %s", got, want)
	}
}

// TestBreakerAlertsOnTransitions: a breaker raises breaker_open when it
// opens from closed (not again from half-open), breaker_closed when it
// closes, and nothing for a state it already had (a new config's router
// reports every state at once).
func TestBreakerAlertsOnTransitions(t *testing.T) {
	d := alerts.NewDispatcher(alerts.Config{QueueSize: 16})
	b := breakerAlerts{d}
	p := &providers.Provider{Name: "test-breaker", Protocol: "openai", BaseURLs: []string{"http://127.0.0.1:1/v1"}, APIKeys: []string{"k"}}
	ups := routing.New(routing.Config{Table: providers.SingleTable(p)}).Upstreams()
	if len(ups) != 1 {
		t.Fatalf("%d upstreams", len(ups))
	}
	u := ups[0]
	for _, s := range []routing.State{routing.Closed, routing.Closed, routing.Open, routing.HalfOpen, routing.Open, routing.HalfOpen, routing.Closed, routing.Closed} {
		b.BreakerState(u, s)
	}
	var kinds []string
	ctx, cancel := context.WithCancel(context.Background())
	ob := &alerts.MemoryOutbox{}
	done := make(chan struct{})
	go func() { d.Run(ctx, ob); close(done) }()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if rec, _ := ob.Recent(ctx, 10); len(rec) >= 2 {
			break
		}
	}
	time.Sleep(20 * time.Millisecond) // room for a wrong third event
	cancel()
	<-done
	rec, _ := ob.Recent(context.Background(), 10)
	for i := len(rec) - 1; i >= 0; i-- {
		kinds = append(kinds, rec[i].Event.Kind)
		if rec[i].Event.Data["provider"] != u.Provider {
			t.Errorf("event %+v: want the provider", rec[i].Event)
		}
	}
	if want := "breaker_open,breaker_closed"; strings.Join(kinds, ",") != want {
		t.Errorf("events %v, want %s", kinds, want)
	}
}
