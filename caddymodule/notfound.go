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
	caddy.RegisterModule(NotFound{})
	httpcaddyfile.RegisterHandlerDirective("air_not_found", parseHandler[NotFound])
	httpcaddyfile.RegisterDirectiveOrder("air_not_found", httpcaddyfile.Before, "respond")
}

// NotFound is the `air_not_found` handler: the catch-all of an API site.
// It answers every request with a 404 JSON error, code unknown_url, in
// OpenAI's shape, or in Anthropic's under /v1/messages, so that a client
// never gets an empty or plain-text answer from a path nothing serves
// (including paths Caddy cleaned, such as /v1/tasks/../../x).
type NotFound struct{}

// CaddyModule returns the Caddy module information.
func (NotFound) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "http.handlers.air_not_found",
		New: func() caddy.Module { return new(NotFound) },
	}
}

// ServeHTTP answers 404, with the gateway's request id, and records the
// refusal (metrics, refusals log).
func (NotFound) ServeHTTP(w http.ResponseWriter, r *http.Request, _ caddyhttp.Handler) error {
	e := apierror.New(http.StatusNotFound, apierror.TypeInvalidRequest, "unknown_url",
		"Invalid URL ("+r.Method+" "+r.URL.Path+")")
	if a := running.Load(); a != nil {
		a.observeRefusal(w, r, nil, r.URL.Path, e)
	} else {
		recordRefusal(w, r, nil, r.URL.Path, e.Status, "unknown_url", e.Message)
	}
	return respondError(w, r, e)
}

// UnmarshalCaddyfile sets up the handler from Caddyfile tokens. Syntax:
//
//	air_not_found [<matcher>]
func (h *NotFound) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	d.Next()
	if d.NextArg() {
		return d.ArgErr()
	}
	return nil
}

// Interface guards.
var (
	_ caddyhttp.MiddlewareHandler = (*NotFound)(nil)
	_ caddyfile.Unmarshaler       = (*NotFound)(nil)
)
