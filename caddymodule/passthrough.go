package caddymodule

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"github.com/tidwall/gjson"
	"go.uber.org/zap"

	"github.com/caddy-air/caddy-air/billing"
	"github.com/caddy-air/caddy-air/chatproxy"
	"github.com/caddy-air/caddy-air/dialect"
	"github.com/caddy-air/caddy-air/gateway"
	"github.com/caddy-air/caddy-air/keys"
	"github.com/caddy-air/caddy-air/reqbody"
)

func init() {
	caddy.RegisterModule(Passthrough{})
	httpcaddyfile.RegisterHandlerDirective("air_passthrough", parseHandler[Passthrough])
	httpcaddyfile.RegisterDirectiveOrder("air_passthrough", httpcaddyfile.Before, "respond")
}

// Passthrough is the `air_passthrough` handler: every request whose path
// is under Prefix is forwarded, with the rest of its path, its query, its
// method and its body, to Provider with the provider's credentials, for
// the provider APIs the gateway does not model. It is authenticated by
// air_auth, admitted by the key's budgets and rate limits as a request
// of the model BillAs (which the key's models must allow), and leaves one
// ledger record (endpoint passthrough, model BillAs) per exchange an
// upstream saw: priced by the price file's entry for BillAs, per request
// (its request rule, for answers 2xx) and by the tokens read at the
// UsageInput and UsageOutput paths of a JSON answer (its tiers).
type Passthrough struct {
	proxyHandler
	// Provider names the provider requests are forwarded to.
	Provider string `json:"provider"`
	// Prefix is the path prefix the handler serves; it is cut from the
	// path sent upstream (/openai/files → {base_url}/files).
	Prefix string `json:"prefix"`
	// BillAs is the model the records name and the price file prices.
	// Default: "passthrough/<provider>".
	BillAs string `json:"bill_as,omitempty"`
	// UsageInput and UsageOutput are gjson paths of the input and output
	// tokens in a JSON answer (e.g. usage.prompt_tokens); empty reads
	// none.
	UsageInput  string `json:"usage_input,omitempty"`
	UsageOutput string `json:"usage_output,omitempty"`

	// protocol is the provider's protocol (credentials, error shape).
	protocol dialect.Wire
}

// CaddyModule returns the Caddy module information.
func (Passthrough) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{ID: "http.handlers.air_passthrough", New: func() caddy.Module { return new(Passthrough) }}
}

// Provision checks the provider and sets the handler up.
func (h *Passthrough) Provision(ctx caddy.Context) error {
	if h.BillAs == "" {
		h.BillAs = "passthrough/" + h.Provider
	}
	if err := h.provision(ctx, gateway.Endpoint{Name: billing.EndpointPassthrough}); err != nil {
		return err
	}
	p := h.app.Routes().Provider(h.Provider)
	if p == nil {
		return fmt.Errorf("air_passthrough: no provider named %q in the air app", h.Provider)
	}
	h.protocol = gateway.ProviderWire(p)
	return nil
}

// Validate checks the configuration.
func (h *Passthrough) Validate() error {
	switch {
	case h.Provider == "":
		return fmt.Errorf("air_passthrough: a provider is required")
	case !strings.HasPrefix(h.Prefix, "/") || strings.HasSuffix(h.Prefix, "/") && h.Prefix != "/":
		return fmt.Errorf("air_passthrough: the prefix %q must start with / and not end with one", h.Prefix)
	}
	return nil
}

// ServeHTTP forwards a request under the prefix and settles it; others go
// to the next handler.
func (h *Passthrough) ServeHTTP(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler) error {
	arrived := time.Now()
	rest, ok := strings.CutPrefix(r.URL.Path, strings.TrimSuffix(h.Prefix, "/"))
	if !ok || rest != "" && rest[0] != '/' {
		return next.ServeHTTP(w, r)
	}
	key, st, rt, aerr := h.app.caller(r)
	if aerr == nil {
		aerr = checkBody(r)
	}
	if aerr == nil {
		aerr = allowModel(r, key, h.BillAs)
	}
	if aerr != nil {
		return h.refuse(w, r, nil, aerr)
	}
	call, rb, err := h.call(w, r, rest)
	if err != nil {
		return h.refuse(w, r, nil, err)
	}
	if rb != nil {
		defer rb.Release()
	}
	reservation, rec, err := h.admit(w, r, key, st, rt, call)
	if err != nil {
		return h.refuse(w, r, nil, err)
	}
	res := h.proxy.Serve(w, r, call)
	defer res.Close()
	return h.settle(w, r, reservation, rec, &res, arrived)
}

// admit checks the storage, admits the request as one of BillAs, names
// it and writes its intent.
func (h *Passthrough) admit(w http.ResponseWriter, r *http.Request, key *keys.Key, st *gateway.Shared, rt *gateway.Services, call *chatproxy.Call) (
	*billing.Reservation, billing.Record, error) {
	if aerr := st.Guard.Check(); aerr != nil {
		return nil, billing.Record{}, aerr
	}
	reservation, aerr := rt.Billing.Admit(r.Context(), subjectOf(r, key), h.BillAs, billing.Usage{})
	if aerr != nil {
		return nil, billing.Record{}, aerr
	}
	call.RequestID = requestIDOf(w, r)
	rec := billing.Record{ID: call.RequestID, Time: time.Now().UTC(), Endpoint: billing.EndpointPassthrough, User: key.User,
		KeyID: key.ID, Model: h.BillAs, Provider: call.Provider.Name}
	if err := reservation.Intend(rec); err != nil {
		reservation.Release()
		h.log.Error("recording a request's intent", zap.String("request_id", call.RequestID), zap.Error(err))
		return nil, billing.Record{}, gateway.ErrStorage
	}
	return reservation, rec, nil
}

// call is the upstream call of a request, its path below the prefix
// rest, with the body it read (nil without one: then rb is nil too).
func (h *Passthrough) call(w http.ResponseWriter, r *http.Request, rest string) (call *chatproxy.Call, rb *reqbody.Body, err error) {
	prov := h.app.Routes().Provider(h.Provider)
	call = &chatproxy.Call{Wire: h.protocol, Operation: billing.EndpointPassthrough, Provider: prov,
		Path: rest, Method: r.Method, ClientHeader: r.Header, Client: clientOf(r), ContentType: r.Header.Get("Content-Type")}
	if r.URL.RawQuery != "" {
		call.Path += "?" + r.URL.RawQuery
	}
	if r.ContentLength != 0 && r.Body != nil && r.Body != http.NoBody {
		if rb, err = reqbody.Read(w, r, h.app.MaxRequestBody); err != nil {
			return nil, nil, err
		}
		call.Body, call.BodyPin = rb.Bytes(), rb
	}
	return call, rb, nil
}

// settle writes the record of an exchange an upstream saw, and ends the
// answer; one no upstream saw gives its reservation back.
func (h *Passthrough) settle(w http.ResponseWriter, r *http.Request, reservation *billing.Reservation, rec billing.Record,
	res *chatproxy.Result, arrived time.Time) error {
	if !res.Reached && !res.Wrote {
		reservation.Release()
		h.app.cfg.Metrics.Count(nil, billing.EndpointPassthrough, metricsOutcome(res.Outcome), res.Status)
		return h.finish(w, r, res.Held, nil)
	}
	rec.Status, rec.Outcome, rec.Usage, rec.Source = res.Status, res.Outcome, billing.Usage{}, billing.SourceUnits
	if res.Status < 400 {
		rec.Usage, rec.Source = h.usage(res.Held.Body())
	}
	gateway.ServedBy(&rec, res.Target)
	rec.DurationMillis = durationMillis(sinceStart(arrived))
	rec, err := reservation.SettleDurable(r.Context(), rec, ledgerWait)
	logFields(r, zap.String("air_request_id", rec.ID), zap.String("air_model", h.BillAs),
		zap.String("air_provider", h.Provider), zap.String("air_cost", rec.Cost.String()), zap.String("air_outcome", rec.Outcome))
	h.app.cfg.Metrics.Count(nil, billing.EndpointPassthrough, metricsOutcome(res.Outcome), res.Status)
	return h.finish(w, r, res.Held, err)
}

// usage reads the tokens at the configured paths of a JSON answer.
func (h *Passthrough) usage(body []byte) (billing.Usage, billing.Source) {
	var u billing.Usage
	src := billing.SourceUnits
	for _, f := range [...]struct {
		path string
		dst  *int64
	}{{h.UsageInput, &u.Input}, {h.UsageOutput, &u.Output}} {
		if f.path == "" {
			continue
		}
		if v := gjson.GetBytes(body, f.path); v.Type == gjson.Number {
			*f.dst, src = v.Int(), billing.SourceReported
		}
	}
	return u.Bounded(), src
}

// UnmarshalCaddyfile sets up the handler from Caddyfile tokens. Syntax:
//
//	air_passthrough <provider> <path prefix> {
//		bill_as <model>
//		usage_input <gjson path>
//		usage_output <gjson path>
//	}
func (h *Passthrough) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	d.Next()
	if !d.Args(&h.Provider, &h.Prefix) || d.NextArg() {
		return d.ArgErr()
	}
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		var dst *string
		switch d.Val() {
		case "bill_as":
			dst = &h.BillAs
		case "usage_input":
			dst = &h.UsageInput
		case "usage_output":
			dst = &h.UsageOutput
		default:
			return d.Errf("unrecognized air_passthrough option %q", d.Val())
		}
		if !d.AllArgs(dst) {
			return d.ArgErr()
		}
	}
	return nil
}

// Interface guards.
var (
	_ caddy.Provisioner           = (*Passthrough)(nil)
	_ caddy.Validator             = (*Passthrough)(nil)
	_ caddyhttp.MiddlewareHandler = (*Passthrough)(nil)
	_ caddyfile.Unmarshaler       = (*Passthrough)(nil)
)
