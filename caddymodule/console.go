package caddymodule

import (
	"crypto/rand"
	"errors"
	"net/http"
	"strings"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/caddy-air/caddy-air/audit"
	"github.com/caddy-air/caddy-air/console"
)

func init() {
	caddy.RegisterModule(Console{})
	httpcaddyfile.RegisterHandlerDirective("air_console", parseHandler[Console])
	httpcaddyfile.RegisterDirectiveOrder("air_console", httpcaddyfile.Before, "respond")
}

// processCSRFKey signs the console's anti-CSRF tokens when no csrf_secret
// is configured: random per process, so forms stay valid across reloads.
var processCSRFKey = func() []byte {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return b
}()

// defaultConsolePrefix is where the console is mounted by default.
const defaultConsolePrefix = "/console"

// Console is the `air_console` handler: the web console (package console)
// where users manage their API keys and see their usage, tasks and a chat
// playground, and admins see users, set the limits of users and keys,
// search the ledger across users and see prices and providers. It has no password store: it
// serves the identity that Caddy's authentication in front of it set
// ({http.auth.user.id} of basic_auth, or a header that forward_auth
// copies), and answers 401 without one.
type Console struct {
	// Admins are the identities that may use the operators' page.
	Admins []string `json:"admins,omitempty"`
	// UserHeader, if set, is the request header that holds the identity
	// (e.g. "X-Forwarded-User", copied by forward_auth from the SSO
	// proxy's answer); otherwise the identity is {http.auth.user.id}.
	UserHeader string `json:"user_header,omitempty"`
	// Prefix is the path the console is mounted under. Default: /console.
	Prefix string `json:"prefix,omitempty"`
	// CSRFSecret signs the anti-CSRF tokens of forms (at least 32
	// characters; placeholders such as {env.X} are expanded). Give every
	// instance behind one address the same secret. Default: random per
	// process.
	CSRFSecret string `json:"csrf_secret,omitempty"`

	h *console.Handler
}

// CaddyModule returns the Caddy module information.
func (Console) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "http.handlers.air_console",
		New: func() caddy.Module { return new(Console) },
	}
}

// Provision builds the console over the air app's services.
func (c *Console) Provision(ctx caddy.Context) error {
	app, err := appFrom(ctx)
	if err != nil {
		return err
	}
	chat := new(Chat)
	if err := chat.Provision(ctx); err != nil {
		return err
	}
	key := processCSRFKey
	if c.CSRFSecret != "" {
		s := caddy.NewReplacer().ReplaceAll(c.CSRFSecret, "")
		if len(s) < 32 {
			return errors.New("air_console: csrf_secret must have at least 32 characters")
		}
		key = []byte(s)
	}
	if c.Prefix == "" {
		c.Prefix = defaultConsolePrefix
	}
	if err := c.check(); err != nil {
		return err
	}
	svc := consoleServices{app: app, chat: chat}
	c.h, err = console.New(console.Config{
		Prefix:  c.Prefix,
		Admins:  c.Admins,
		CSRFKey: key,
		Services: console.Services{
			Keys: svc, Usage: svc, Tasks: consoleTasks{svc}, Playground: svc, Operators: svc, Teams: consoleTeams(svc),
			Alerts: consoleAlerts{svc}, Audit: svc, RequestLogs: svc,
		},
		Logger: ctx.Logger(),
	})
	return err
}

// ServeHTTP serves the console to the request's identity.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request, _ caddyhttp.Handler) error {
	user := c.identity(r)
	r = r.WithContext(audit.WithActor(r.Context(), audit.Actor{Name: user, Via: audit.ViaConsole, ClientIP: clientIP(r)}))
	c.h.ServeHTTP(w, r, user)
	return nil
}

// identity is the user Caddy's authentication established for r.
func (c *Console) identity(r *http.Request) string {
	if c.UserHeader != "" {
		return strings.TrimSpace(r.Header.Get(c.UserHeader))
	}
	repl, ok := r.Context().Value(caddy.ReplacerCtxKey).(*caddy.Replacer)
	if !ok {
		return ""
	}
	v, _ := repl.GetString("http.auth.user.id")
	return strings.TrimSpace(v)
}

// UnmarshalCaddyfile sets up the handler from Caddyfile tokens. Syntax:
//
//	air_console [<matcher>] {
//		admins <identity...>
//		user_header <header>
//		prefix <path>
//		csrf_secret <secret>
//	}
//
// Put Caddy's authentication in front of it, e.g.:
//
//	handle /console/* {
//		basic_auth {
//			alice <bcrypt hash>
//		}
//		air_console {
//			admins alice
//		}
//	}
func (c *Console) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	d.Next()
	if d.NextArg() {
		return d.ArgErr()
	}
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		switch d.Val() {
		case "admins":
			args := d.RemainingArgs()
			if len(args) == 0 {
				return d.ArgErr()
			}
			c.Admins = append(c.Admins, args...)
		case "user_header", "prefix", "csrf_secret":
			opt := d.Val()
			if !d.NextArg() {
				return d.ArgErr()
			}
			switch opt {
			case "user_header":
				c.UserHeader = d.Val()
			case "prefix":
				c.Prefix = d.Val()
				if err := c.check(); err != nil {
					return d.Err(err.Error())
				}
			default:
				c.CSRFSecret = d.Val()
			}
			if d.NextArg() {
				return d.ArgErr()
			}
		default:
			return d.Errf("unknown air_console option %q", d.Val())
		}
	}
	return nil
}

// check checks the console's settings, whatever config set them (the
// Caddyfile or JSON): the prefix is a path.
func (c *Console) check() error {
	if !strings.HasPrefix(c.Prefix, "/") {
		return errors.New("air_console: prefix must start with /")
	}
	return nil
}

// Interface guards.
var (
	_ caddy.Provisioner           = (*Console)(nil)
	_ caddyhttp.MiddlewareHandler = (*Console)(nil)
	_ caddyfile.Unmarshaler       = (*Console)(nil)
)
