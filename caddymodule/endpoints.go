package caddymodule

import (
	"net/http"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"go.uber.org/zap"

	"github.com/caddy-air/caddy-air/airmetrics"
	"github.com/caddy-air/caddy-air/billing"
	"github.com/caddy-air/caddy-air/chatproxy"
	"github.com/caddy-air/caddy-air/dialect"
	"github.com/caddy-air/caddy-air/dialect/anthropic"
	"github.com/caddy-air/caddy-air/dialect/openai"
	"github.com/caddy-air/caddy-air/providers"
)

func init() {
	caddy.RegisterModule(Embeddings{})
	caddy.RegisterModule(CountTokens{})
	caddy.RegisterModule(Moderations{})
	httpcaddyfile.RegisterHandlerDirective("air_embeddings", parseHandler[Embeddings])
	httpcaddyfile.RegisterHandlerDirective("air_count_tokens", parseHandler[CountTokens])
	httpcaddyfile.RegisterHandlerDirective("air_moderations", parseHandler[Moderations])
	httpcaddyfile.RegisterDirectiveOrder("air_embeddings", httpcaddyfile.Before, "respond")
	httpcaddyfile.RegisterDirectiveOrder("air_count_tokens", httpcaddyfile.Before, "respond")
	httpcaddyfile.RegisterDirectiveOrder("air_moderations", httpcaddyfile.Before, "respond")
}

// Embeddings is the `air_embeddings` handler: `POST /v1/embeddings`,
// passed through to the provider of the model (of kind embedding) byte for
// byte but for the model alias, through the same attempts and retries as
// chat, and billed on the input tokens the upstream reports
// (usage.prompt_tokens) at the model's price.
type Embeddings struct{ proxyHandler }

// CountTokens is the `air_count_tokens` handler: `POST
// /v1/messages/count_tokens`, Anthropic's token counting, passed through
// to the provider of a model of kind messages; a gemini or vertex model's
// tokens are counted by Gemini's countTokens, and any other chat model's
// are the gateway's own estimate (see countTokens). It is not billed and
// leaves no ledger record, but counts as a request against the rate
// limits.
type CountTokens struct{ proxyHandler }

// Moderations is the `air_moderations` handler: `POST /v1/moderations`,
// passed through to the provider of the model (of kind moderation) byte
// for byte but for the model alias, and billed by the model's request
// price (which may be 0), not by tokens.
type Moderations struct{ proxyHandler }

// CaddyModule returns the Caddy module information.
func (Moderations) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{ID: "http.handlers.air_moderations", New: func() caddy.Module { return new(Moderations) }}
}

// Provision sets the handler up for OpenAI moderations.
func (h *Moderations) Provision(ctx caddy.Context) error {
	return h.provision(ctx, protocolSpec{
		protocol: openai.Wire, endpoint: billing.EndpointModerations, path: "/moderations",
		kind: providers.KindModeration, inspect: openai.InspectModerations, noOutput: true,
		usage: unitsOnly,
	})
}

// unitsOnly is the usage of a request billed by its request price alone:
// no tokens.
func unitsOnly(dialect.Inspected, *chatproxy.Result) (billing.Usage, billing.Source) {
	return billing.Usage{}, billing.SourceUnits
}

// CaddyModule returns the Caddy module information.
func (Embeddings) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{ID: "http.handlers.air_embeddings", New: func() caddy.Module { return new(Embeddings) }}
}

// CaddyModule returns the Caddy module information.
func (CountTokens) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{ID: "http.handlers.air_count_tokens", New: func() caddy.Module { return new(CountTokens) }}
}

// Provision sets the handler up for OpenAI embeddings.
func (h *Embeddings) Provision(ctx caddy.Context) error {
	return h.provision(ctx, protocolSpec{
		protocol: openai.Wire, endpoint: billing.EndpointEmbeddings, path: "/embeddings",
		kind: providers.KindEmbedding, inspect: openai.InspectEmbeddings, noOutput: true,
	})
}

// Provision sets the handler up for Anthropic token counting.
func (h *CountTokens) Provision(ctx caddy.Context) error {
	return h.provision(ctx, protocolSpec{
		protocol: anthropic.Wire, endpoint: "count_tokens", path: "/messages/count_tokens",
		kind: providers.KindMessages, inspect: anthropic.InspectCountTokens, noOutput: true, unbilled: true,
		count: countTokens,
	})
}

// serveUnbilled proxies an admitted request that leaves no ledger record:
// its reservation keeps the request counted against the rate limits once
// an upstream saw it, and is given back whole otherwise.
func (h *proxyHandler) serveUnbilled(w http.ResponseWriter, r *http.Request, reservation *billing.Reservation,
	body []byte, rebody func(string) ([]byte, error), rb *requestBody, in dialect.Inspected, route *providers.Route, injected bool, requestID string) error {
	start := time.Now()
	res := h.proxy.Serve(w, r, &chatproxy.Call{
		Wire:         h.spec.protocol,
		Operation:    h.spec.endpoint,
		Provider:     route.Provider,
		Path:         h.spec.path,
		Body:         body,
		BodyPin:      rb,
		Inspected:    in,
		StripUsage:   injected,
		ClientHeader: r.Header,
		RequestID:    requestID,
		Client:       clientOf(r),
		Route:        route,
		BodyModel:    route.UpstreamModel,
		Rebody:       rebody,
	})
	defer res.Close()
	if res.Reached || res.Wrote {
		reservation.ReleaseCost()
	} else {
		reservation.Release()
	}
	logFields(r, zap.String("air_request_id", requestID), zap.String("air_model", in.Model),
		zap.String("air_provider", res.Provider), zap.String("air_outcome", res.Outcome))
	h.app.metrics.Route(route.Pattern).Observe(&airmetrics.Request{Endpoint: h.spec.endpoint, Outcome: metricsOutcome(res.Outcome),
		Status: res.Status, Duration: sinceStart(start)})
	return h.finish(w, r, res.Held, nil)
}

// Interface guards.
var (
	_ caddy.Provisioner           = (*Embeddings)(nil)
	_ caddy.Provisioner           = (*CountTokens)(nil)
	_ caddy.Provisioner           = (*Moderations)(nil)
	_ caddyhttp.MiddlewareHandler = (*Moderations)(nil)
	_ caddyfile.Unmarshaler       = (*Moderations)(nil)
	_ caddyhttp.MiddlewareHandler = (*Embeddings)(nil)
	_ caddyhttp.MiddlewareHandler = (*CountTokens)(nil)
	_ caddyfile.Unmarshaler       = (*Embeddings)(nil)
	_ caddyfile.Unmarshaler       = (*CountTokens)(nil)
)
