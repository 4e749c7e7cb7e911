package caddymodule

import (
	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/caddy-air/caddy-air/airmetrics"
	"github.com/caddy-air/caddy-air/billing"
	"github.com/caddy-air/caddy-air/chatproxy"
	"github.com/caddy-air/caddy-air/dialect"
	"github.com/caddy-air/caddy-air/dialect/anthropic"
	"github.com/caddy-air/caddy-air/dialect/openai"
	"github.com/caddy-air/caddy-air/gateway"
	"github.com/caddy-air/caddy-air/providers"
)

func init() {
	caddy.RegisterModule(Embeddings{})
	caddy.RegisterModule(CountTokens{})
	caddy.RegisterModule(Moderations{})
	gateway.RegisterKind(providers.KindEmbedding, "POST /v1/embeddings")
	gateway.RegisterKind(providers.KindModeration, "POST /v1/moderations")
	airmetrics.RegisterEndpoint(billing.EndpointModerations, "moderations", providers.KindModeration)
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
	return h.provision(ctx, gateway.Endpoint{
		Name: billing.EndpointModerations, Path: "/moderations", Kind: providers.KindModeration,
		Wire:    gateway.Wire{Protocol: openai.Wire, Inspect: openai.InspectModerations},
		Billing: gateway.Billing{NoOutput: true, Usage: unitsOnly},
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
	return h.provision(ctx, gateway.Endpoint{
		Name: billing.EndpointEmbeddings, Path: "/embeddings", Kind: providers.KindEmbedding,
		Wire:    gateway.Wire{Protocol: openai.Wire, Inspect: openai.InspectEmbeddings},
		Billing: gateway.Billing{NoOutput: true},
	})
}

// Provision sets the handler up for Anthropic token counting.
func (h *CountTokens) Provision(ctx caddy.Context) error {
	return h.provision(ctx, gateway.Endpoint{
		Name: "count_tokens", Path: "/messages/count_tokens", Kind: providers.KindMessages,
		Wire:    gateway.Wire{Protocol: anthropic.Wire, Inspect: anthropic.InspectCountTokens},
		Billing: gateway.Billing{Mode: gateway.Unbilled, NoOutput: true},
		Count:   func(x *gateway.Exchange) error { return gateway.TokenCounter{Config: &h.app.cfg}.Count(x) },
	})
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
