package caddymodule

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/caddy-air/caddy-air/audit"
)

// auditConfigTimeout bounds how long a config's start spends comparing
// its prices and providers with the audit trail.
const auditConfigTimeout = 5 * time.Second

// providersSnapshot is the providers' part of a config as the trail
// records it: providers (their API keys and the credentials in base URLs
// removed by audit.Redact) and the models that route to them.
type providersSnapshot struct {
	Providers []*ProviderConfig `json:"providers"`
	Models    []*ModelConfig    `json:"models"`
}

// auditConfig records, when a config starts, a price table or a set of
// providers and models that differs from the one the trail recorded last
// ("prices.reload", "providers.change"): a config load or reload is the
// change, its author unknown to the app (actor "config"). Instances that
// share a trail and start the same config record it once, give or take
// a race between their starts.
func (a *App) auditConfig(st *state) {
	ctx, cancel := context.WithTimeout(context.Background(), auditConfigTimeout)
	defer cancel()
	ctx = audit.WithActor(ctx, audit.Actor{Name: audit.ViaConfig, Via: audit.ViaConfig})
	for _, e := range []audit.Entry{
		{Action: "prices.reload", TargetType: "prices", TargetID: a.Prices,
			After: a.pricesReport()},
		{Action: "providers.change", TargetType: "providers", TargetID: "providers",
			After: providersSnapshot{Providers: a.Providers, Models: a.Models}},
	} {
		if _, err := st.audit.RecordChange(ctx, e); err != nil {
			a.logger.Error("the audit trail did not record the config's change", zap.String("action", e.Action), zap.Error(err))
		}
	}
}
