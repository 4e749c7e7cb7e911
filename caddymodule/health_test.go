package caddymodule

import (
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/caddy-air/caddy-air/health"
)

func TestHealthCaddyfile(t *testing.T) {
	for i, tc := range []struct {
		input   string
		want    health.Thresholds
		window  time.Duration
		wantErr bool
	}{
		{input: "air {\n health {\n window 30s\n min_success_rate 0.8\n min_attempts 3\n max_ledger_lag 2s\n }\n}",
			want: health.Thresholds{MinSuccessRate: 0.8, MinAttempts: 3, MaxLedgerLag: 2 * time.Second}, window: 30 * time.Second},
		{input: "air {\n health {\n min_success_rate 0\n }\n}", want: health.Thresholds{MinSuccessRate: -1}},
		{input: "air {\n health {\n min_clients 1\n }\n}", want: health.Thresholds{MinClients: 1}},
		{input: "air {\n health {\n min_clients 0\n }\n}", wantErr: true},
		{input: "air {\n health {\n min_success_rate 1.5\n }\n}", wantErr: true},
		{input: "air {\n health {\n min_attempts 0\n }\n}", wantErr: true},
		{input: "air {\n health {\n window soon\n }\n}", wantErr: true},
		{input: "air {\n health {\n colour red\n }\n}", wantErr: true},
		{input: "air {\n health on\n}", wantErr: true},
	} {
		a := new(App)
		err := a.UnmarshalCaddyfile(caddyfile.NewTestDispenser(tc.input))
		if (err != nil) != tc.wantErr {
			t.Errorf("Test %d: err = %v, want error %t", i, err, tc.wantErr)
			continue
		}
		if err != nil {
			continue
		}
		if got := a.Health.thresholds(); got != tc.want {
			t.Errorf("Test %d: thresholds %+v, want %+v", i, got, tc.want)
		}
		if time.Duration(a.Health.Window) != tc.window {
			t.Errorf("Test %d: window %s, want %s", i, time.Duration(a.Health.Window), tc.window)
		}
	}
}

// TestHealthValidate: the ranges hold for a JSON config too, which skips
// the Caddyfile's checks.
func TestHealthValidate(t *testing.T) {
	rate := 2.0
	for i, tc := range []struct {
		c  *HealthConfig
		ok bool
	}{
		{nil, true}, {&HealthConfig{MinClients: 8}, true}, {&HealthConfig{MinClients: 9}, false},
		{&HealthConfig{MinClients: -1}, false}, {&HealthConfig{MinAttempts: -1}, false}, {&HealthConfig{MinSuccessRate: &rate}, false},
	} {
		if err := tc.c.validate(); (err == nil) != tc.ok {
			t.Errorf("Test %d: %+v: %v", i, tc.c, err)
		}
	}
}

func TestHealthHandlerCaddyfile(t *testing.T) {
	for i, tc := range []struct {
		input, want string
		wantErr     bool
	}{
		{"air_health", "", false}, {"air_health live", "live", false}, {"air_health ready", "ready", false},
		{"air_health dead", "", true}, {"air_health live ready", "", true},
	} {
		var h Health
		err := h.UnmarshalCaddyfile(caddyfile.NewTestDispenser(tc.input))
		if (err != nil) != tc.wantErr || err == nil && h.Check != tc.want {
			t.Errorf("Test %d: %q: check %q, err %v", i, tc.input, h.Check, err)
		}
	}
	if err := (&Health{Check: "dead"}).Validate(); err == nil {
		t.Error("a JSON config's check \"dead\" validated")
	}
}
