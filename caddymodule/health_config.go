package caddymodule

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/caddy-air/caddy-air/gateway"
	"github.com/caddy-air/caddy-air/health"
)

// HealthConfig tunes the checks of `GET /air/health` and `air_health`.
type HealthConfig struct {
	// Window is how far back each provider's upstream attempts are
	// counted. Default: 1m.
	Window caddy.Duration `json:"window,omitempty"`
	// MinSuccessRate is the share of a provider's recent attempts (0 to 1)
	// that must succeed for its check to pass. 0 turns the provider checks
	// off. Default: 0.5.
	MinSuccessRate *float64 `json:"min_success_rate,omitempty"`
	// MinAttempts is how many attempts a provider must have made within
	// the window before its success rate is judged. Default: 5.
	MinAttempts int64 `json:"min_attempts,omitempty"`
	// MinClients is how many distinct users' attempts must have failed
	// within the window before a provider's check may fail, so that one
	// client's bad requests cannot take the gateway out of its load
	// balancer. 1 to 8. Default: 3.
	MinClients int64 `json:"min_clients,omitempty"`
	// MaxLedgerLag is how long the oldest ledger record may wait for the
	// writer before the ledger check fails. Default: 5s.
	MaxLedgerLag caddy.Duration `json:"max_ledger_lag,omitempty"`
}

// provisionHealth fills the health defaults and starts the provider
// tracker of this config, which knows every configured provider.
func (a *App) provisionHealth() {
	if a.Health == nil {
		a.Health = &HealthConfig{}
	}
	if a.Health.Window <= 0 {
		a.Health.Window = caddy.Duration(health.DefaultWindow)
	}
	names := make([]string, 0, len(a.Providers))
	for _, p := range a.Providers {
		names = append(names, p.Name)
	}
	a.cfg.Tracker = health.NewTracker(time.Duration(a.Health.Window), names...)
	a.cfg.Probe = new(gateway.Probe)
}

// validate checks the thresholds' ranges, whatever config set them (the
// Caddyfile or JSON).
func (c *HealthConfig) validate() error {
	switch {
	case c == nil:
		return nil
	case c.MinClients < 0 || c.MinClients > health.MaxClients:
		return fmt.Errorf("health: min_clients must be from 1 to %d", health.MaxClients)
	case c.MinAttempts < 0:
		return errors.New("health: min_attempts must be positive")
	case c.MinSuccessRate != nil && (*c.MinSuccessRate < 0 || *c.MinSuccessRate > 1):
		return errors.New("health: min_success_rate must be from 0 to 1")
	}
	return nil
}

// thresholds are the health checks' limits.
func (c *HealthConfig) thresholds() health.Thresholds {
	th := health.Thresholds{MaxLedgerLag: time.Duration(c.MaxLedgerLag), MinAttempts: c.MinAttempts, MinClients: c.MinClients}
	if c.MinSuccessRate != nil {
		th.MinSuccessRate = *c.MinSuccessRate
		if th.MinSuccessRate <= 0 {
			th.MinSuccessRate = -1 // off
		}
	}
	return th
}

// healthReport runs the health checks of a's config on st
// (gateway.ReportHealth): public for air_health, not for the admin API.
func (a *App) healthReport(ctx context.Context, st *gateway.Shared, public bool) (gateway.HealthReport, int) {
	return gateway.ReportHealth(ctx, st, &a.cfg, time.Duration(a.Health.Window), a.Health.thresholds(), public)
}
