// Package gemini is the air.dialects.gemini module: Google AI Studio's
// Gemini API, the model in the URL and the key in x-goog-api-key.
package gemini

import (
	"context"
	"errors"
	"net/http"

	"github.com/caddyserver/caddy/v2"

	"github.com/caddy-air/caddy-air/caddymodule/airmod"
	"github.com/caddy-air/caddy-air/dialect/authn"
	"github.com/caddy-air/caddy-air/dialect/gemini"
	"github.com/caddy-air/caddy-air/providers"
)

func init() {
	caddy.RegisterModule(Gemini{})
}

// Gemini is a Google AI Studio provider. It takes no settings beyond the
// provider's: an api_key is required, and its base URL defaults to
// https://generativelanguage.googleapis.com.
type Gemini struct{}

// CaddyModule returns the Caddy module information.
func (Gemini) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  airmod.DialectNamespace + "." + providers.ProtocolGemini,
		New: func() caddy.Module { return new(Gemini) },
	}
}

// Protocol implements airmod.Dialect.
func (Gemini) Protocol() string { return providers.ProtocolGemini }

// Setup implements airmod.Dialect: a key is required; the base URL
// defaults to AI Studio's.
func (Gemini) Setup(p *providers.Provider, _ airmod.SetupOptions) error {
	if len(p.APIKeys) == 0 {
		return errors.New("a gemini provider needs an api_key (Google AI Studio's)")
	}
	if len(p.BaseURLs) == 0 {
		p.BaseURLs = []string{gemini.BaseURL}
	}
	p.Endpoint = endpoint{}
	return nil
}

// HealthPath implements airmod.HealthPather: AI Studio's model list.
func (Gemini) HealthPath() string { return "/v1beta/models" }

// endpoint builds Google AI Studio's requests: the model in the URL, the
// attempt's key in x-goog-api-key.
type endpoint struct{}

// NewRequest implements providers.Endpoint.
func (endpoint) NewRequest(ctx context.Context, a providers.Attempt, model string, stream bool, body []byte) (*http.Request, error) {
	e := gemini.Endpoint{BaseURL: a.BaseURL, APIKey: a.APIKey}
	return e.NewRequest(ctx, model, stream, body)
}

// Authorize implements providers.Endpoint.
func (endpoint) Authorize(req *http.Request, a providers.Attempt) error {
	authn.SetAuth(req.Header, providers.ProtocolGemini, a.APIKey, nil)
	return nil
}

// Interface guards.
var (
	_ airmod.Dialect      = (*Gemini)(nil)
	_ airmod.HealthPather = (*Gemini)(nil)
	_ providers.Endpoint  = endpoint{}
)
