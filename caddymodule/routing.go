package caddymodule

import (
	"github.com/caddyserver/caddy/v2"

	"github.com/caddy-air/caddy-air/airmetrics"
	"github.com/caddy-air/caddy-air/gateway"
	"github.com/caddy-air/caddy-air/routing"
)

// routingMetrics tells the Prometheus metrics of the router's events.
type routingMetrics struct{ m *airmetrics.Metrics }

// BreakerState sets the upstream's breaker gauge.
func (o routingMetrics) BreakerState(u *routing.Upstream, s routing.State) {
	o.m.BreakerState(u.Provider, u.Deployment(), u.PublicBaseURL(), u.Key, int(s))
}

// KeyRejected counts a key out of rotation.
func (o routingMetrics) KeyRejected(provider string, key int) { o.m.KeyRejected(provider, key) }

// Cooldown counts an upstream put in cooldown.
func (o routingMetrics) Cooldown(u *routing.Upstream) { o.m.Cooldown(u.Provider, u.Deployment()) }

// Fallback counts a request moving to a fallback model.
func (o routingMetrics) Fallback(model, fallback string) { o.m.Fallback(model, fallback) }

// routingObserver is the router's observer: the alerts, and the metrics
// unless they are off.
func (a *App) routingObserver() routing.Observer {
	if a.cfg.Metrics == nil {
		return gateway.BreakerAlerts(a.cfg.Alerts)
	}
	return gateway.Observers{routingMetrics{a.cfg.Metrics.Metrics()}, gateway.BreakerAlerts(a.cfg.Alerts)}
}

// upstreamStates keeps the breaker and cooldown of every configured
// upstream by its routing.Identity, across config loads, as
// caddy-ratelimit keeps its rate limiters: a reload provisions the new
// config (which takes a reference to each state) before it cleans up the
// old one (which gives its references back), so an upstream unchanged by
// the reload keeps its state, and one no longer configured loses it.
var upstreamStates = caddy.NewUsagePool()

// keptState is an upstream's state in upstreamStates.
type keptState struct{ *routing.UpstreamState }

// Destruct lets the state go: there is nothing to release.
func (keptState) Destruct() error { return nil }

// upstreamState returns the kept state of the upstream with identity id,
// and records the reference for Cleanup to give back.
func (a *App) upstreamState(id string) *routing.UpstreamState {
	v, _, _ := upstreamStates.LoadOrNew(id, func() (caddy.Destructor, error) {
		return keptState{routing.NewUpstreamState()}, nil
	})
	a.stateRefs = append(a.stateRefs, id)
	return v.(keptState).UpstreamState
}

// releaseStates gives back the app's references to upstream states.
func (a *App) releaseStates() {
	for _, id := range a.stateRefs {
		_, _ = upstreamStates.Delete(id)
	}
	a.stateRefs = nil
}

// Interface guard.
var _ caddy.Destructor = keptState{}

// retainBreakers deletes the breaker series of the upstreams this config
// no longer has (airmetrics.RetainBreakers). It runs once the config
// starts, so that a config that fails to load leaves the running one's
// series alone.
func (a *App) retainBreakers() {
	if a.cfg.Metrics == nil || a.cfg.Router == nil {
		return
	}
	ups := a.cfg.Router.Upstreams()
	keep := make([]airmetrics.Upstream, len(ups))
	for i, u := range ups {
		keep[i] = airmetrics.Upstream{Provider: u.Provider, Deployment: u.Deployment(), BaseURL: u.PublicBaseURL(), Key: u.Key}
	}
	a.cfg.Metrics.Metrics().RetainBreakers(keep)
}
