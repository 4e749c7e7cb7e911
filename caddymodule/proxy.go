package caddymodule

import (
	"encoding/binary"
	"encoding/hex"
	"math/rand/v2"
	"net/http"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"go.uber.org/zap"

	"github.com/caddy-air/caddy-air/airmetrics"
	"github.com/caddy-air/caddy-air/billing"
	"github.com/caddy-air/caddy-air/chatproxy"
	"github.com/caddy-air/caddy-air/dialect/anthropic"
	"github.com/caddy-air/caddy-air/dialect/openai"
	"github.com/caddy-air/caddy-air/dialect/translate"
	"github.com/caddy-air/caddy-air/gateway"
	"github.com/caddy-air/caddy-air/providers"
)

func init() {
	caddy.RegisterModule(Chat{})
	caddy.RegisterModule(Messages{})
	gateway.RegisterKind(providers.KindChat, "POST /v1/chat/completions")
	gateway.RegisterKind(providers.KindMessages, "POST /v1/messages")
	httpcaddyfile.RegisterHandlerDirective("air_chat", parseHandler[Chat])
	httpcaddyfile.RegisterHandlerDirective("air_messages", parseHandler[Messages])
	httpcaddyfile.RegisterDirectiveOrder("air_chat", httpcaddyfile.Before, "respond")
	httpcaddyfile.RegisterDirectiveOrder("air_messages", httpcaddyfile.Before, "respond")
}

// Chat is the `air_chat` handler: `POST /v1/chat/completions`, passed
// through to the provider that serves the model, byte for byte, with usage
// captured and settled in the ledger.
type Chat struct{ proxyHandler }

// Messages is the `air_messages` handler: `POST /v1/messages`, Anthropic's
// Messages API passed through the same way, with prompt-cache accounting.
type Messages struct{ proxyHandler }

// CaddyModule returns the Caddy module information.
func (Chat) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{ID: "http.handlers.air_chat", New: func() caddy.Module { return new(Chat) }}
}

// CaddyModule returns the Caddy module information.
func (Messages) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{ID: "http.handlers.air_messages", New: func() caddy.Module { return new(Messages) }}
}

// Provision sets the handler up for OpenAI chat completions.
func (h *Chat) Provision(ctx caddy.Context) error {
	return h.provision(ctx, chatEndpoint)
}

// chatEndpoint is air_chat's endpoint.
var chatEndpoint = gateway.Endpoint{
	Name: billing.EndpointChat, Path: "/chat/completions", Kind: providers.KindChat,
	Wire:   gateway.Wire{Protocol: openai.Wire, Inspect: openai.InspectChat},
	Client: translate.Chat,
}

// Provision sets the handler up for Anthropic messages.
func (h *Messages) Provision(ctx caddy.Context) error {
	return h.provision(ctx, gateway.Endpoint{
		Name: billing.EndpointMessages, Path: "/messages", Kind: providers.KindMessages,
		Wire:   gateway.Wire{Protocol: anthropic.Wire, Inspect: anthropic.InspectMessages},
		Client: translate.Messages,
	})
}

// proxyHandler is the shared body of the handlers served by the exchange
// pipeline (gateway.Engine).
type proxyHandler struct {
	engine *gateway.Engine
	app    *App
	proxy  *chatproxy.Proxy
	log    *zap.Logger
}

func (h *proxyHandler) provision(ctx caddy.Context, ep gateway.Endpoint) error {
	app, err := appFrom(ctx)
	if err != nil {
		return err
	}
	h.setup(app, ctx.Logger(), ep)
	return nil
}

// setup sets the handler up for ep on app.
func (h *proxyHandler) setup(app *App, log *zap.Logger, ep gateway.Endpoint) {
	h.app, h.log = app, log
	h.proxy = &chatproxy.Proxy{Transport: app.Transport(), Logger: h.log, MaxJSONDepth: app.MaxJSONDepth, Health: app.cfg.Tracker,
		Router: app.cfg.Router}
	if app.cfg.Metrics != nil {
		h.proxy.Attempts = app.cfg.Metrics
	}
	h.engine = &gateway.Engine{Endpoint: ep, Host: exchangeHost{app}, Proxy: h.proxy, Routes: app.Routes(), Metrics: app.cfg.Metrics,
		Log: log, MaxRequestBody: app.MaxRequestBody, MaxJSONDepth: app.MaxJSONDepth}
}

// ServeHTTP serves one exchange (gateway.Engine.Serve): its ledger
// record is durable before the client gets the end of the answer.
func (h *proxyHandler) ServeHTTP(w http.ResponseWriter, r *http.Request, _ caddyhttp.Handler) error {
	return handlerError(h.engine.Serve(w, r))
}

// handlerError maps the engine's errors to Caddy's: a *gateway.StatusError
// becomes a caddyhttp.HandlerError of its status, for Caddy's error log
// and the server's handle_errors routes.
func handlerError(err error) error {
	if se, ok := err.(*gateway.StatusError); ok {
		return caddyhttp.Error(se.Status, se.Err)
	}
	return err
}

// refuse answers a request the gateway refuses by itself with err, as
// respondError does, and counts it in the metrics.
func (h *proxyHandler) refuse(w http.ResponseWriter, r *http.Request, mr *airmetrics.Route, err error) error {
	h.app.observeRefusal(w, r, mr, h.engine.Endpoint.Name, err)
	return respondError(w, r, err)
}

// finish writes the held end of a response (gateway.Finish).
func (h *proxyHandler) finish(w http.ResponseWriter, _ *http.Request, held *chatproxy.Held, settled error) error {
	return handlerError(gateway.Finish(w, held, settled, h.engine.Endpoint.Name))
}

// newRequestID returns a fresh request id, "req_" and 96 random bits in
// hex. It names the request's ledger record and its log entries, and the
// access log shows it as air_request_id. The bits come from the runtime's
// ChaCha8 generator, which needs no system call: Caddy's
// {http.request.uuid}, used before, reads crypto/rand and rebuilds the
// access log's extra fields, about 2% of the gateway's CPU per streamed
// request. An id must be unique, not secret.
func newRequestID() string {
	var b [12]byte
	binary.LittleEndian.PutUint64(b[:8], rand.Uint64())
	binary.LittleEndian.PutUint32(b[8:], rand.Uint32())
	return "req_" + hex.EncodeToString(b[:])
}

// UnmarshalCaddyfile sets up the handler from Caddyfile tokens. Syntax:
//
//	air_chat [<matcher>]
//	air_messages [<matcher>]
//
// Providers and models are configured in the global `air` option.
func (h *proxyHandler) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	d.Next()
	if d.NextArg() {
		return d.ArgErr()
	}
	if d.NextBlock(0) {
		return d.Errf("%s takes no options; configure providers in the global air option", d.Val())
	}
	return nil
}

// Interface guards.
var (
	_ caddy.Provisioner           = (*Chat)(nil)
	_ caddy.Provisioner           = (*Messages)(nil)
	_ caddyhttp.MiddlewareHandler = (*Chat)(nil)
	_ caddyhttp.MiddlewareHandler = (*Messages)(nil)
	_ caddyfile.Unmarshaler       = (*Chat)(nil)
	_ caddyfile.Unmarshaler       = (*Messages)(nil)
)
