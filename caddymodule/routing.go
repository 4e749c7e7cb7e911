package caddymodule

import (
	"github.com/caddy-air/caddy-air/airmetrics"
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

// routingObserver is the router's observer: the metrics, or nil when
// metrics are off.
func (a *App) routingObserver() routing.Observer {
	if a.metrics == nil {
		return nil
	}
	return routingMetrics{a.metrics.Metrics()}
}
