package caddymodule

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
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
	return st.Repos.Alerts.Recent(ctx, n)
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

// handleAlerts answers GET /air/alerts[?limit=n]: the deliveries of the
// newest alerts (default 100, at most 1000), newest first.
func (Admin) handleAlerts(w http.ResponseWriter, r *http.Request) error {
	if r.Method != http.MethodGet {
		return apiErr(http.StatusMethodNotAllowed, fmt.Errorf("method %s not allowed", r.Method))
	}
	st, err := startedState()
	if err != nil {
		return err
	}
	n := 100
	if s := r.URL.Query().Get("limit"); s != "" {
		if n, err = strconv.Atoi(s); err != nil || n < 1 || n > 1000 {
			return apiErr(http.StatusBadRequest, fmt.Errorf("limit: want 1 to 1000, got %q", s))
		}
	}
	ds, err := st.Repos.Alerts.Recent(r.Context(), n)
	if err != nil {
		return apiErr(http.StatusInternalServerError, err)
	}
	if ds == nil {
		ds = []store.AlertDelivery{}
	}
	return writeAdminJSON(w, http.StatusOK, ds)
}

// RegenerateKey implements console.KeyRegenerator: POST
// /air/keys/{id}/regenerate.
func (s consoleServices) RegenerateKey(ctx context.Context, id string, grace time.Duration) (string, error) {
	st, err := s.state()
	if err != nil {
		return "", err
	}
	secret, _, err := st.RegenerateKey(ctx, id, grace)
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
