package caddymodule

import (
	"testing"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/caddy-air/caddy-air/airmetrics"
	"github.com/caddy-air/caddy-air/apierror"
	"github.com/caddy-air/caddy-air/reqbody"
)

func TestMetricsCaddyfile(t *testing.T) {
	for i, tc := range []struct {
		input   string
		want    *MetricsConfig
		wantErr bool
	}{
		{"air {\n}", nil, false},
		{"air {\n metrics off\n}", &MetricsConfig{Off: true}, false},
		{"air {\n metrics {\n per_user\n }\n}", &MetricsConfig{PerUser: true}, false},
		{"air {\n metrics {\n off\n }\n}", &MetricsConfig{Off: true}, false},
		{"air {\n metrics on\n}", nil, true},
		{"air {\n metrics off now\n}", nil, true},
		{"air {\n metrics {\n per_user yes\n }\n}", nil, true},
		{"air {\n metrics {\n per_model\n }\n}", nil, true},
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
		if (a.Metrics == nil) != (tc.want == nil) || a.Metrics != nil && *a.Metrics != *tc.want {
			t.Errorf("Test %d: metrics = %+v, want %+v", i, a.Metrics, tc.want)
		}
	}
}

func TestRefusalReason(t *testing.T) {
	full := apierror.New(507, apierror.TypeServer, "storage_full", "full")
	for i, tc := range []struct {
		err  *apierror.Error
		want string
	}{
		{apierror.New(429, apierror.TypeInsufficient, "insufficient_quota", "x"), airmetrics.ReasonBudget},
		{apierror.New(429, apierror.TypeRateLimit, "rate_limit_exceeded", "x"), airmetrics.ReasonRateLimit},
		{full, airmetrics.ReasonStorageFull},
		{errNotStarted, airmetrics.ReasonUnavailable},
		{apierror.NotFound("model_not_found", "x"), airmetrics.ReasonInvalidRequest},
		{reqbody.TooLarge(10), airmetrics.ReasonInvalidRequest},
	} {
		if got := refusalReason(tc.err); got != tc.want {
			t.Errorf("Test %d: %s = %q, want %q", i, tc.err.Message, got, tc.want)
		}
	}
}

func TestMetricsOutcome(t *testing.T) {
	for in, want := range map[string]string{
		"ok": "ok", "partial": "partial", "canceled": "canceled", "timeout": "timeout",
		"upstream_error": "upstream_error", "unavailable": "upstream_error",
	} {
		if got := metricsOutcome(in); got != want {
			t.Errorf("metricsOutcome(%q) = %q, want %q", in, got, want)
		}
	}
}
