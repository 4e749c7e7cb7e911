package caddymodule

import (
	"net/http"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/caddy-air/caddy-air/apierror"
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
type Health struct {
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

// notServing is the report of an app that has not started, or has
// stopped.
var notServing = healthReport{Status: "failing", Failing: []string{"gateway: starting or stopping"}}

// ServeHTTP answers the health report.
func (h *Health) ServeHTTP(w http.ResponseWriter, r *http.Request, _ caddyhttp.Handler) error {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		return respondError(w, r, apierror.New(http.StatusMethodNotAllowed, apierror.TypeInvalidRequest, "method_not_allowed", "use GET"))
	}
	w.Header().Set("Cache-Control", "no-store")
	st := h.app.current()
	if st == nil {
		return writeJSON(w, http.StatusServiceUnavailable, notServing)
	}
	rep, status := h.app.healthReport(r.Context(), st, true)
	return writeJSON(w, status, rep)
}

// UnmarshalCaddyfile sets up the handler from Caddyfile tokens. Syntax:
//
//	air_health [<matcher>]
//
// The checks' thresholds are set in the global air option's health block.
func (h *Health) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	d.Next()
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
	_ caddyhttp.MiddlewareHandler = (*Health)(nil)
	_ caddyfile.Unmarshaler       = (*Health)(nil)
)
