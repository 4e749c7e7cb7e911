package caddymodule

import (
	"reflect"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

func TestModelToSyntax(t *testing.T) {
	d := caddyfile.NewTestDispenser(`air {
		provider openai {
			protocol openai
			base_url http://a/v1
			fail_duration 10s
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
	if !reflect.DeepEqual(m.Deployments, want) || !reflect.DeepEqual(m.Fallbacks, []string{"claude-sonnet"}) || m.LBPolicy != "least_requests" {
		t.Errorf("model %+v", m)
	}
	if mini := a.Models[1]; mini.Provider != "openai" || mini.UpstreamModel != "gpt-4o-mini" || len(mini.Deployments) != 0 {
		t.Errorf("shorthand model %+v", mini)
	}
	p := a.Providers[0]
	if p.FailureRate != 0.25 || time.Duration(p.FailDuration) != 10*time.Second || p.HealthCheck == nil || p.HealthCheck.Path != "/health" {
		t.Errorf("provider %+v", p)
	}
	for _, bad := range []string{
		"air {\nmodel m {\nto p\nlb_policy fastest\n}\n}",
		"air {\nmodel m\n}",
		"air {\nmodel m p {\nto q\n}\n}",
		"air {\nmodel m {\nto p weight x\n}\n}",
	} {
		if err := new(App).UnmarshalCaddyfile(caddyfile.NewTestDispenser(bad)); err == nil {
			t.Errorf("%s: accepted", bad)
		}
	}
}
