package caddymodule

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/caddy-air/caddy-air/health"
	"github.com/caddy-air/caddy-air/store"
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
	a.tracker = health.NewTracker(time.Duration(a.Health.Window), names...)
	a.probe = new(storeProbe)
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

// probeInterval is how long the result of a store write probe is reused:
// health checks, however frequent, cost at most one store write per
// interval.
const probeInterval = 5 * time.Second

// probeTimeout bounds a store write probe.
const probeTimeout = 2 * time.Second

// storeProbe tests, at most once per probeInterval, that the store takes
// a write.
type storeProbe struct {
	mu  sync.Mutex
	at  time.Time
	err error
}

// check returns the error of a recent write probe of s, probing anew when
// the last one is older than probeInterval.
func (p *storeProbe) check(ctx context.Context, s store.Prober) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.at.IsZero() && time.Since(p.at) < probeInterval {
		return p.err
	}
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	p.err = nil
	if s != nil {
		p.err = s.Probe(ctx)
	}
	p.at = time.Now()
	return p.err
}
