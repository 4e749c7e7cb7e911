package caddymodule

import (
	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"github.com/tidwall/gjson"

	"github.com/caddy-air/caddy-air/billing"
	"github.com/caddy-air/caddy-air/chatproxy"
	"github.com/caddy-air/caddy-air/dialect"
	"github.com/caddy-air/caddy-air/dialect/cohere"
	"github.com/caddy-air/caddy-air/dialect/openai"
	"github.com/caddy-air/caddy-air/gateway"
	"github.com/caddy-air/caddy-air/providers"
)

func init() {
	caddy.RegisterModule(Rerank{})
	gateway.RegisterKind(providers.KindRerank, "POST /v1/rerank")
	httpcaddyfile.RegisterHandlerDirective("air_rerank", parseHandler[Rerank])
	httpcaddyfile.RegisterDirectiveOrder("air_rerank", httpcaddyfile.Before, "respond")
}

// Rerank is the `air_rerank` handler: `POST /v1/rerank`, in the shape
// Cohere, Jina, LiteLLM and New-API share, passed through to the provider
// of the model (of kind rerank) byte for byte but for the model alias: an
// `openai` provider that serves /rerank (Jina, vLLM) or a `cohere` one
// (Cohere's /v2/rerank). It is billed on the search units (Cohere's
// meta.billed_units) or tokens (usage.total_tokens) the provider reports,
// as the model's price says; estimated when it reports neither.
type Rerank struct{ proxyHandler }

// CaddyModule returns the Caddy module information.
func (Rerank) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{ID: "http.handlers.air_rerank", New: func() caddy.Module { return new(Rerank) }}
}

// Provision sets the handler up for rerank.
func (h *Rerank) Provision(ctx caddy.Context) error {
	return h.provision(ctx, gateway.Endpoint{
		Name: billing.EndpointRerank, Path: "/rerank", Kind: providers.KindRerank,
		Wire:    gateway.Wire{Protocol: openai.Wire, Inspect: cohere.InspectRerank},
		Billing: gateway.Billing{NoOutput: true, Usage: rerankUsage},
	})
}

// rerankUsage reads a rerank answer's usage: Cohere's
// meta.billed_units.search_units, or usage.prompt_tokens (else
// total_tokens) of Jina's shape. With neither, it estimates both: one
// search unit per 100 documents, as Cohere counts them, and the tokens
// of the query and documents.
func rerankUsage(in dialect.Inspected, res *chatproxy.Result) (billing.Usage, billing.Source) {
	body := res.Held.Body()
	var u billing.Usage
	if units := gjson.GetBytes(body, "meta.billed_units.search_units"); units.Type == gjson.Number {
		u.SearchUnits = units.Int()
		if t := gjson.GetBytes(body, "meta.billed_units.input_tokens"); t.Type == gjson.Number {
			u.Input = t.Int()
		}
		return u.Bounded(), billing.SourceReported
	}
	for _, path := range [...]string{"usage.prompt_tokens", "usage.total_tokens"} {
		if t := gjson.GetBytes(body, path); t.Type == gjson.Number {
			u.Input = t.Int()
			return u.Bounded(), billing.SourceReported
		}
	}
	u.Input = dialect.EstimateRequest(in, 0).Input
	u.SearchUnits = (in.Documents + 99) / 100
	return u.Bounded(), billing.SourceEstimated
}

// Interface guards.
var (
	_ caddy.Provisioner           = (*Rerank)(nil)
	_ caddyhttp.MiddlewareHandler = (*Rerank)(nil)
	_ caddyfile.Unmarshaler       = (*Rerank)(nil)
)
