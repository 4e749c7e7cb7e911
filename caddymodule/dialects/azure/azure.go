// Package azure is the air.dialects.azure module: Azure OpenAI, OpenAI's
// chat completions on a resource's deployments (or its v1 path), the key
// in api-key or a Microsoft Entra ID bearer token.
package azure

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/caddy-air/caddy-air/caddymodule/airmod"
	"github.com/caddy-air/caddy-air/dialect/azure"
	"github.com/caddy-air/caddy-air/providers"
)

func init() {
	caddy.RegisterModule(Azure{})
}

// apiVersionV1 is the api_version that selects the v1 path.
const apiVersionV1 = "v1"

// Azure holds what an azure provider needs beyond its endpoint (base_url,
// the resource URL such as https://my-resource.openai.azure.com) and its
// keys (api_key, sent as the api-key header) or, in their place, its
// Entra ID credentials.
type Azure struct {
	// APIVersion is the api-version query parameter of the deployment
	// path, {endpoint}/openai/deployments/{deployment}/chat/completions,
	// where the model's upstream id is the deployment's name: a date such
	// as 2024-10-21, maybe with -preview. "v1" sends requests to the v1
	// OpenAI-compatible path instead, {endpoint}/openai/v1/chat/completions,
	// with no api-version, where the body's model names the deployment.
	// Default: azure.DefaultAPIVersion (2024-10-21).
	APIVersion string `json:"api_version,omitempty"`
	// Entra, if set, authenticates with Microsoft Entra ID bearer tokens
	// instead of an api_key.
	Entra *Entra `json:"entra,omitempty"`

	ep endpoint
}

// CaddyModule returns the Caddy module information.
func (Azure) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  airmod.DialectNamespace + "." + providers.ProtocolAzure,
		New: func() caddy.Module { return new(Azure) },
	}
}

// Protocol implements airmod.Dialect.
func (*Azure) Protocol() string { return providers.ProtocolAzure }

// Provision checks the api-version and makes the Entra ID credential.
func (z *Azure) Provision(caddy.Context) error {
	z.ep = endpoint{apiVersion: azure.DefaultAPIVersion}
	switch v := z.APIVersion; v {
	case "":
	case apiVersionV1:
		z.ep.v1, z.ep.apiVersion = true, ""
	default:
		if err := azure.CheckAPIVersion(v); err != nil {
			return fmt.Errorf("api_version %q: %w", v, err)
		}
		z.ep.apiVersion = v
	}
	if z.Entra != nil {
		var err error
		if z.ep.tokens, err = z.Entra.tokens(caddy.NewReplacer()); err != nil {
			return fmt.Errorf("entra: %w", err)
		}
	}
	return nil
}

// Setup implements airmod.Dialect: it checks the provider's endpoints and
// keys (or Entra ID credentials), and normalizes its endpoints as the portal shows them (with or
// without /openai or /openai/v1) to the resource's root URL.
func (z *Azure) Setup(p *providers.Provider, _ airmod.SetupOptions) error {
	if len(p.BaseURLs) == 0 {
		return errors.New("an azure provider needs its resource endpoint, such as https://my-resource.openai.azure.com")
	}
	switch {
	case z.Entra != nil && len(p.APIKeys) > 0:
		return errors.New("an azure provider authenticates with api_key or entra, not both")
	case z.Entra == nil && len(p.APIKeys) == 0:
		return errors.New("an azure provider needs its resource's api_key, or entra credentials")
	}
	for i, u := range p.BaseURLs {
		e, err := azure.ParseEndpoint(u)
		if err != nil {
			return fmt.Errorf("endpoint %q: %w", u, err)
		}
		p.BaseURLs[i] = e
	}
	p.Endpoint = z.ep
	return nil
}

// HealthPath implements airmod.HealthPather: the resource's model list.
func (z *Azure) HealthPath() string {
	if z.ep.v1 {
		return "/openai/v1/models"
	}
	return "/openai/models?api-version=" + z.ep.apiVersion
}

// UnmarshalCaddyfile reads the azure settings of a provider block:
//
//	api_version <yyyy-mm-dd[-preview]>|v1
//	entra { … }
func (z *Azure) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	for d.Next() {
		switch d.Val() {
		case "api_version":
			if !d.AllArgs(&z.APIVersion) {
				return d.ArgErr()
			}
		case "entra":
			e, err := parseEntra(d)
			if err != nil {
				return err
			}
			z.Entra = e
		default:
			return airmod.NotASetting(d, d.Val(), providers.ProtocolAzure)
		}
	}
	return nil
}

// endpoint builds Azure OpenAI's chat requests: the deployment (the
// model's upstream id) and api-version in the URL, or the v1 path; the
// attempt's key in api-key, or an Entra ID token.
type endpoint struct {
	apiVersion string
	v1         bool
	// tokens, if set, replace the key: Entra ID bearer tokens.
	tokens *azure.Tokens
}

// NewRequest implements providers.Endpoint.
func (e endpoint) NewRequest(ctx context.Context, a providers.Attempt, model string, stream bool, body []byte) (*http.Request, error) {
	ep := azure.Endpoint{URL: a.BaseURL, Key: a.APIKey, Tokens: e.tokens, APIVersion: e.apiVersion, V1: e.v1}
	return ep.NewRequest(ctx, model, stream, body)
}

// Authorize implements providers.Endpoint.
func (e endpoint) Authorize(req *http.Request, a providers.Attempt) error {
	if e.tokens != nil {
		return e.tokens.SetAuth(req)
	}
	azure.SetAuth(req.Header, a.APIKey)
	return nil
}

// Interface guards.
var (
	_ airmod.Dialect        = (*Azure)(nil)
	_ airmod.HealthPather   = (*Azure)(nil)
	_ caddy.Provisioner     = (*Azure)(nil)
	_ caddyfile.Unmarshaler = (*Azure)(nil)
	_ providers.Endpoint    = endpoint{}
)
