package caddymodule

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"go.uber.org/zap"

	"github.com/caddy-air/caddy-air/alerts"
	"github.com/caddy-air/caddy-air/providers"
	"github.com/caddy-air/caddy-air/routing"
)

func TestAlertsCaddyfile(t *testing.T) {
	for i, tc := range []struct {
		input   string
		wantErr string
	}{
		{"air {\n alerts {\n webhook ops https://hooks.example/x {\n secret {env.HOOK_SECRET}\n events budget breaker_open\n format slack\n }\n key_expiry_lead 24h\n check_interval 10s\n queue_size 64\n }\n}", ""},
		{"air {\n alerts {\n webhook ops\n }\n}", "wrong argument count"},
		{"air {\n alerts {\n webhook ops https://a {\n events budgets\n }\n }\n}", `unknown event "budgets"`},
		{"air {\n alerts {\n webhook ops https://a {\n format xml\n }\n }\n}", `format "xml"`},
		{"air {\n alerts {\n webhook ops https://a\n webhook ops https://b\n }\n}", "defined twice"},
		{"air {\n alerts {\n webhook ops https://a {\n retries 3\n }\n }\n}", `unrecognized webhook option "retries"`},
		{"air {\n alerts {\n key_expiry_lead soon\n }\n}", "bad duration"},
		{"air {\n alerts {\n queue_size 0\n }\n}", "positive integer"},
	} {
		a := new(App)
		err := a.UnmarshalCaddyfile(caddyfile.NewTestDispenser(tc.input))
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("Test %d: err = %v, want one with %q", i, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Fatalf("Test %d: %v", i, err)
		}
		c := a.Alerts
		w := c.Webhooks[0]
		if w.Name != "ops" || w.URL != "https://hooks.example/x" || w.Secret != "{env.HOOK_SECRET}" || strings.Join(w.Events, ",") != "budget,breaker_open" ||
			w.Format != "slack" || time.Duration(c.KeyExpiryLead) != 24*time.Hour || time.Duration(c.CheckInterval) != 10*time.Second || c.QueueSize != 64 {
			t.Errorf("Test %d: parsed %+v, webhook %+v", i, c, w)
		}
	}
}

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

// TestAlertsProvisionKeepsSecretsOutOfErrors: a webhook whose secret or
// URL cannot be resolved fails the load without naming either.
func TestAlertsProvisionKeepsSecretsOutOfErrors(t *testing.T) {
	for i, w := range []*WebhookConfig{
		{Name: "ops", URL: "https://hooks.example/T0/B0/tok3n-{env.AIR_TEST_UNSET_HOOK}"},
		{Name: "ops", URL: "https://hooks.example/x", Secret: "s3cr3t-{env.AIR_TEST_UNSET_HOOK}"},
	} {
		a := &App{Alerts: &AlertsConfig{Webhooks: []*WebhookConfig{w}}}
		a.logger = zap.NewNop()
		err := a.provisionAlerts(caddy.Context{})
		if err == nil || strings.Contains(err.Error(), "tok3n") || strings.Contains(err.Error(), "s3cr3t") || !strings.Contains(err.Error(), "webhook ops") {
			t.Errorf("Test %d: err = %v; want one that names the webhook and not its values", i, err)
		}
	}
}
