package caddymodule

import (
	"net/http"
	"strconv"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"github.com/tidwall/sjson"

	"github.com/caddy-air/caddy-air/apierror"
)

func init() {
	caddy.RegisterModule(Models{})
	httpcaddyfile.RegisterHandlerDirective("air_models", parseHandler[Models])
	httpcaddyfile.RegisterDirectiveOrder("air_models", httpcaddyfile.Before, "respond")
}

// Models is the `air_models` handler: `GET /v1/models` lists the configured
// model ids (globs excluded) in OpenAI's list format, so that SDKs and tools
// can discover them.
type Models struct {
	body []byte
}

// CaddyModule returns the Caddy module information.
func (Models) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "http.handlers.air_models",
		New: func() caddy.Module { return new(Models) },
	}
}

// Provision renders the model list once per config.
func (m *Models) Provision(ctx caddy.Context) error {
	app, err := appFrom(ctx)
	if err != nil {
		return err
	}
	created := time.Now().Unix()
	m.body = []byte(`{"object":"list","data":[]}`)
	for i, r := range app.Routes().Models() {
		p := "data." + strconv.Itoa(i)
		m.body, _ = sjson.SetBytes(m.body, p+".id", r.Pattern)
		m.body, _ = sjson.SetBytes(m.body, p+".object", "model")
		m.body, _ = sjson.SetBytes(m.body, p+".created", created)
		m.body, _ = sjson.SetBytes(m.body, p+".owned_by", r.Provider.Name)
	}
	return nil
}

// ServeHTTP answers GET with the list.
func (m *Models) ServeHTTP(w http.ResponseWriter, r *http.Request, _ caddyhttp.Handler) error {
	if r.Method != http.MethodGet {
		return respondError(w, r, apierror.New(http.StatusMethodNotAllowed, apierror.TypeInvalidRequest, "method_not_allowed", "use GET on /v1/models"))
	}
	return writeRawJSON(w, http.StatusOK, m.body)
}

// UnmarshalCaddyfile sets up the handler from Caddyfile tokens. Syntax:
//
//	air_models [<matcher>]
func (m *Models) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	d.Next()
	if d.NextArg() {
		return d.ArgErr()
	}
	return nil
}

// Interface guards.
var (
	_ caddy.Provisioner           = (*Models)(nil)
	_ caddyhttp.MiddlewareHandler = (*Models)(nil)
	_ caddyfile.Unmarshaler       = (*Models)(nil)
)
