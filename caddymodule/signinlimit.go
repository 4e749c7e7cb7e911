package caddymodule

import (
	"errors"
	"net"
	"net/http"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/caddy-air/caddy-air/apierror"
	"github.com/caddy-air/caddy-air/signin"
)

func init() {
	caddy.RegisterModule(SignInLimit{})
	httpcaddyfile.RegisterHandlerDirective("air_signin_limit", parseHandler[SignInLimit])
	httpcaddyfile.RegisterDirectiveOrder("air_signin_limit", httpcaddyfile.Before, "basic_auth")
}

// SignInLimit is the `air_signin_limit` handler: it goes in front of
// Caddy's basic_auth and stops a client that keeps failing to sign in
// before its next password reaches bcrypt. A request whose Basic
// credentials basic_auth refused (401) counts as a failure of its client
// IP (as Caddy reads it, trusted_proxies included) and of its user name;
// once either has spent its failures, its requests with credentials get
// 429 rate_limit_error with Retry-After, without a password check, until
// a failure comes back (one per window/limit). Requests without
// credentials, and signed-in users' requests, are never counted nor
// slowed.
type SignInLimit struct {
	// PerIP is how many failed sign-ins a client IP may make per window.
	// Default: 5.
	PerIP int `json:"per_ip,omitempty"`
	// PerUser is how many failed sign-ins a user name may get per window,
	// from any IP. Default: 10.
	PerUser int `json:"per_user,omitempty"`
	// Window is the period the limits count over. Default: 1m.
	Window caddy.Duration `json:"window,omitempty"`

	lim *signin.Limiter
	now func() time.Time
}

// Defaults of air_signin_limit.
const (
	defaultSignInPerIP   = 5
	defaultSignInPerUser = 10
)

// CaddyModule returns the Caddy module information.
func (SignInLimit) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "http.handlers.air_signin_limit",
		New: func() caddy.Module { return new(SignInLimit) },
	}
}

// Provision sets the defaults and makes the limiter.
func (h *SignInLimit) Provision(caddy.Context) error {
	if h.PerIP == 0 {
		h.PerIP = defaultSignInPerIP
	}
	if h.PerUser == 0 {
		h.PerUser = defaultSignInPerUser
	}
	if h.Window == 0 {
		h.Window = caddy.Duration(signin.DefaultWindow)
	}
	h.lim = signin.New(signin.Config{PerIP: h.PerIP, PerUser: h.PerUser, Window: time.Duration(h.Window)})
	h.now = time.Now
	return nil
}

// Validate checks the limits.
func (h *SignInLimit) Validate() error {
	if h.PerIP < 0 || h.PerUser < 0 || h.Window < 0 {
		return errors.New("air_signin_limit: per_ip, per_user and window must be positive")
	}
	return nil
}

// ServeHTTP refuses a sign-in whose IP or user has spent its failures,
// and counts the failures of the others.
func (h *SignInLimit) ServeHTTP(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler) error {
	user, _, ok := r.BasicAuth()
	if !ok {
		return next.ServeHTTP(w, r)
	}
	ip := clientIP(r)
	if wait := h.lim.Wait(ip, user, h.now()); wait > 0 {
		e := apierror.New(http.StatusTooManyRequests, apierror.TypeRateLimit, "too_many_failed_sign_ins",
			"too many failed sign-ins from this address or for this user; retry after the time in Retry-After")
		e.RetryAfter = int((wait + time.Second - 1) / time.Second)
		return respondError(w, r, e)
	}
	err := next.ServeHTTP(w, r)
	var he caddyhttp.HandlerError
	if errors.As(err, &he) && he.StatusCode == http.StatusUnauthorized {
		h.lim.Failed(ip, user, h.now())
	}
	return err
}

// clientIP is r's client IP as Caddy determined it (trusted proxies
// applied), else its remote address.
func clientIP(r *http.Request) string {
	if ip, ok := caddyhttp.GetVar(r.Context(), caddyhttp.ClientIPVarKey).(string); ok && ip != "" {
		return ip
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// UnmarshalCaddyfile sets up the handler from Caddyfile tokens. Syntax:
//
//	air_signin_limit [<matcher>] {
//		per_ip <n>
//		per_user <n>
//		window <duration>
//	}
//
// It runs before basic_auth, e.g.:
//
//	handle /console/* {
//		air_signin_limit
//		basic_auth {
//			alice <bcrypt hash>
//		}
//		air_console
//	}
func (h *SignInLimit) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	d.Next()
	if d.NextArg() {
		return d.ArgErr()
	}
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		var err error
		switch d.Val() {
		case "per_ip":
			h.PerIP, err = parsePositiveInt(d)
		case "per_user":
			h.PerUser, err = parsePositiveInt(d)
		case "window":
			var s string
			if !d.AllArgs(&s) {
				return d.ArgErr()
			}
			var dur time.Duration
			if dur, err = caddy.ParseDuration(s); err == nil && dur <= 0 {
				err = d.Errf("window: want a positive duration, got %q", s)
			}
			h.Window = caddy.Duration(dur)
		default:
			return d.Errf("air_signin_limit: unknown option %q", d.Val())
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// Interface guards.
var (
	_ caddy.Provisioner           = (*SignInLimit)(nil)
	_ caddy.Validator             = (*SignInLimit)(nil)
	_ caddyhttp.MiddlewareHandler = (*SignInLimit)(nil)
	_ caddyfile.Unmarshaler       = (*SignInLimit)(nil)
)
