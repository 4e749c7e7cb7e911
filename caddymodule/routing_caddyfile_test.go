package caddymodule

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

func TestModelToSyntax(t *testing.T) {
	d := caddyfile.NewTestDispenser(`air {
		provider openai {
			protocol openai
			base_url http://a/v1
			fail_duration 10s
			try_timeout 2s
			failure_rate 0.25
			health_check /health {
				interval 5s
			}
		}
		model gpt-4o {
			to openai gpt-4o weight 3 keys 0 1
			to azure gpt-4o-prod weight 1 rpm 100
			fallback claude-sonnet
			lb_policy least_requests
			max_output_tokens 64000
		}
		model mini openai gpt-4o-mini
	}`)
	a := new(App)
	if err := a.UnmarshalCaddyfile(d); err != nil {
		t.Fatal(err)
	}
	m := a.Models[0]
	want := []*DeploymentConfig{{Provider: "openai", UpstreamModel: "gpt-4o", Weight: 3, Keys: []int{0, 1}},
		{Provider: "azure", UpstreamModel: "gpt-4o-prod", Weight: 1, RPM: 100}}
	if !reflect.DeepEqual(m.Deployments, want) || !reflect.DeepEqual(m.Fallbacks, []string{"claude-sonnet"}) || m.LBPolicy != "least_requests" || m.MaxOutputTokens != 64000 {
		t.Errorf("model %+v", m)
	}
	if mini := a.Models[1]; mini.Provider != "openai" || mini.UpstreamModel != "gpt-4o-mini" || len(mini.Deployments) != 0 {
		t.Errorf("shorthand model %+v", mini)
	}
	p := a.Providers[0]
	if p.FailureRate != 0.25 || time.Duration(p.FailDuration) != 10*time.Second || time.Duration(p.TryTimeout) != 2*time.Second || p.HealthCheck == nil || p.HealthCheck.Path != "/health" {
		t.Errorf("provider %+v", p)
	}
	for _, bad := range []string{
		"air {\nmodel m {\nto p\nlb_policy fastest\n}\n}",
		"air {\nmodel m\n}",
		"air {\nmodel m p {\nto q\n}\n}",
		"air {\nmodel m {\nto p weight x\n}\n}",
		"air {\nmodel m p {\nmax_output_tokens 0\n}\n}",
		"air {\nprovider p {\nprotocol openai\nbase_url http://a\ntry_timeout 0s\n}\n}",
	} {
		if err := loadCaddyfile(bad); err == nil {
			t.Errorf("%s: accepted", bad)
		}
	}
}

// TestTryTimeoutConfig: a provider's try_timeout reaches its routing
// options, unset is no bound, and one not shorter than the provider's
// timeout fails the load.
func TestTryTimeoutConfig(t *testing.T) {
	ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
	defer cancel()
	for i, tc := range []struct {
		try, timeout time.Duration
		wantErr      string // "" when the config loads
	}{
		{0, 0, ""},
		{2 * time.Second, 0, ""},
		{300 * time.Millisecond, time.Second, ""},
		{time.Second, time.Second, "provider p: try_timeout 1s must be positive and shorter than timeout 1s"},
		{time.Hour, 0, "shorter than timeout 10m0s"},
	} {
		a := &App{
			StorageRaw: badgerJSON(t.TempDir()),
			Providers: []*ProviderConfig{{Name: "p", DialectRaw: dialectJSON("openai"), BaseURLs: []string{"http://a/v1"},
				TryTimeout: caddy.Duration(tc.try), Timeout: caddy.Duration(tc.timeout)}},
		}
		err := a.Provision(ctx)
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("Test %d: %v", i, err)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("Test %d: error %v, want one containing %q", i, err, tc.wantErr)
		case tc.wantErr == "" && a.routingOptions()["p"].TryTimeout != tc.try:
			t.Errorf("Test %d: routing try timeout %s, want %s", i, a.routingOptions()["p"].TryTimeout, tc.try)
		}
		if err := a.Cleanup(); err != nil {
			t.Errorf("Test %d: cleanup: %v", i, err)
		}
	}
}
