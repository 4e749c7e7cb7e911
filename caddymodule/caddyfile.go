package caddymodule

import (
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
)

// unmarshalerHandler is a handler module that parses its own Caddyfile
// tokens.
type unmarshalerHandler[T any] interface {
	*T
	caddyhttp.MiddlewareHandler
	caddyfile.Unmarshaler
}

// parseHandler is the httpcaddyfile.UnmarshalFunc of every air handler
// directive.
func parseHandler[T any, P unmarshalerHandler[T]](h httpcaddyfile.Helper) (caddyhttp.MiddlewareHandler, error) {
	p := P(new(T))
	err := p.UnmarshalCaddyfile(h.Dispenser)
	return p, err
}
