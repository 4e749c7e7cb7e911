package caddymodule

import (
	"context"
	"errors"
	"time"

	"github.com/caddy-air/caddy-air/console"
	"github.com/caddy-air/caddy-air/keys"
	"github.com/caddy-air/caddy-air/store"
)

// consoleAlerts is the console's view of the alerts.
type consoleAlerts struct{ s consoleServices }

// Recent implements console.AlertService.
func (c consoleAlerts) Recent(ctx context.Context, n int) ([]store.AlertDelivery, error) {
	st, err := c.s.state()
	if err != nil {
		return nil, err
	}
	return st.repos.Alerts.Recent(ctx, n)
}

// Webhooks implements console.AlertService.
func (c consoleAlerts) Webhooks() []string {
	var out []string
	if c.s.app.Alerts != nil {
		for _, w := range c.s.app.Alerts.Webhooks {
			out = append(out, w.Name)
		}
	}
	return out
}

// RegenerateKey implements console.KeyRegenerator: POST
// /air/keys/{id}/regenerate.
func (s consoleServices) RegenerateKey(ctx context.Context, id string, grace time.Duration) (string, error) {
	st, err := s.state()
	if err != nil {
		return "", err
	}
	secret, _, err := st.regenerateKey(ctx, id, grace)
	switch {
	case errors.Is(err, keys.ErrNoSuchKey):
		return "", console.ErrNotFound
	case errors.Is(err, keys.ErrRevoked), errors.Is(err, keys.ErrBadGrace):
		return "", console.Invalid(err)
	}
	return secret, err
}

// Interface guards.
var (
	_ console.AlertService   = consoleAlerts{}
	_ console.KeyRegenerator = consoleServices{}
)
