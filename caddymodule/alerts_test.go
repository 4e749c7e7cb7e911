package caddymodule

import (
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"go.uber.org/zap"
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
