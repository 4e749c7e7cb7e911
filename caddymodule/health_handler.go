package caddymodule

import (
	"fmt"
	"net/http"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/caddy-air/caddy-air/apierror"
	"github.com/caddy-air/caddy-air/gateway"
)

func init() {
	caddy.RegisterModule(Health{})
	httpcaddyfile.RegisterHandlerDirective("air_health", parseHandler[Health])
	httpcaddyfile.RegisterDirectiveOrder("air_health", httpcaddyfile.Before, "respond")
}

// Health is the `air_health` handler: it answers GET (and HEAD) with the
// health report of `GET /air/health`, 200 while the gateway serves and 503
// with the failing checks otherwise, for load balancers that probe a site
// rather than the admin API. It needs no API key. Its report leaves out
// what only an operator should see: the storage directory, and the error
// texts of the store, the ledger and the free-space measure (which may
// name files); those reasons read "details on the admin API's
// /air/health". Provider names and their attempt counts are shown.
//
// With Check "live" it answers liveness instead: 200 unless the gateway
// needs a restart to serve again (its ledger stopped after a failed
// sync), for an orchestrator's liveness probe (restart me), while the
// default "ready" is for its readiness probe and load balancers (take me
// out of rotation). A full disk, a failing provider or a starting app
// fail readiness, never liveness.
type Health struct {
	// Check is "ready" (the default: every check) or "live".
	Check string `json:"check,omitempty"`

	app *App
}

// CaddyModule returns the Caddy module information.
func (Health) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{ID: "http.handlers.air_health", New: func() caddy.Module { return new(Health) }}
}

// Provision finds the air app.
func (h *Health) Provision(ctx caddy.Context) (err error) {
	h.app, err = appFrom(ctx)
	return err
}

// Validate checks the kind of check.
func (h *Health) Validate() error {
	switch h.Check {
	case "", "ready", "live":
		return nil
	}
	return fmt.Errorf("air_health: check %q: want ready or live", h.Check)
}

// ServeHTTP answers the health report.
func (h *Health) ServeHTTP(w http.ResponseWriter, r *http.Request, _ caddyhttp.Handler) error {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		return respondError(w, r, apierror.New(http.StatusMethodNotAllowed, apierror.TypeInvalidRequest, "method_not_allowed", "use GET"))
	}
	w.Header().Set("Cache-Control", "no-store")
	st := h.app.live.Shared()
	if h.Check == "live" {
		// Starting or stopping is not a reason to be restarted.
		rep, status := gateway.ReportLive(st)
		return writeJSON(w, status, rep)
	}
	if st == nil {
		return writeJSON(w, http.StatusServiceUnavailable, gateway.NotServing)
	}
	rep, status := h.app.healthReport(r.Context(), st, true)
	return writeJSON(w, status, rep)
}

// UnmarshalCaddyfile sets up the handler from Caddyfile tokens. Syntax:
//
//	air_health [<matcher>] [ready|live]
//
// The checks' thresholds are set in the global air option's health block.
func (h *Health) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	d.Next()
	if d.NextArg() {
		h.Check = d.Val()
		if err := h.Validate(); err != nil {
			return d.Err(err.Error())
		}
	}
	if d.NextArg() {
		return d.ArgErr()
	}
	if d.NextBlock(0) {
		return d.Errf("air_health takes no options; set thresholds in the global air option's health block")
	}
	return nil
}

// Interface guards.
var (
	_ caddy.Provisioner           = (*Health)(nil)
	_ caddy.Validator             = (*Health)(nil)
	_ caddyhttp.MiddlewareHandler = (*Health)(nil)
	_ caddyfile.Unmarshaler       = (*Health)(nil)
)
