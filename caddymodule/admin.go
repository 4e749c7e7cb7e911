package caddymodule

import (
	"net/http"
	"sync/atomic"

	"github.com/caddyserver/caddy/v2"

	"github.com/caddy-air/caddy-air/admin"
)

func init() {
	caddy.RegisterModule(Admin{})
}

// running is the air app of the active config, for the admin API: admin
// modules are provisioned before apps exist, so they look it up per request.
var running atomic.Pointer[App]

// Admin is the `admin.api.air` module: key management, usage reports and
// budgets over Caddy's admin API (the routes of admin.API, served with
// the running app's services, adminGateway). The `caddy air` command is
// its client.
type Admin struct{}

// CaddyModule returns the Caddy module information.
func (Admin) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "admin.api.air",
		New: func() caddy.Module { return new(Admin) },
	}
}

// Routes returns the admin routes of caddy-air (admin.API's). Each
// handler runs with the request's actor in its context, for the audit
// trail.
func (Admin) Routes() []caddy.AdminRoute {
	api := admin.API{Gateway: adminGateway{}, ParseDuration: caddy.ParseDuration, ClientIP: clientIP}
	var routes []caddy.AdminRoute
	for _, rt := range api.Routes() {
		routes = append(routes, caddy.AdminRoute{Pattern: rt.Pattern, Handler: asAdminHandler(rt.Handler)})
	}
	return routes
}

// asAdminHandler serves h as a Caddy admin handler: its errors with a
// status of their own become caddy.APIError; the others are left to the
// admin server (a 500).
func asAdminHandler(h admin.HandlerFunc) caddy.AdminHandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		err := h(w, r)
		if ae, ok := err.(*admin.Error); ok {
			return caddy.APIError{HTTPStatus: ae.Status, Err: ae.Err}
		}
		return err
	}
}

// Interface guard.
var _ caddy.AdminRouter = Admin{}
