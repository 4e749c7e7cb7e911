package caddymodule

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/caddy-air/caddy-air/dialect/azure"
	"github.com/caddy-air/caddy-air/providers"
)

// AzureConfig holds what an azure provider needs beyond its endpoint
// (base_url, the resource URL such as https://my-resource.openai.azure.com)
// and its keys (api_key, sent as the api-key header).
type AzureConfig struct {
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
	Entra *EntraConfig `json:"entra,omitempty"`
}

// EntraConfig is how an azure provider gets Microsoft Entra ID tokens
// (scope https://cognitiveservices.azure.com/.default): an app
// registration's client secret, or the machine's managed identity.
type EntraConfig struct {
	// TenantID is the app registration's directory (tenant) id.
	TenantID string `json:"tenant_id,omitempty"`
	// ClientID is the app registration's application (client) id, or,
	// with ManagedIdentity, a user-assigned identity's client id.
	ClientID string `json:"client_id,omitempty"`
	// ClientSecret is the app registration's secret; {env.*} is expanded.
	ClientSecret string `json:"client_secret,omitempty"`
	// AuthorityHost replaces https://login.microsoftonline.com/ (a
	// sovereign cloud's authority); https only.
	AuthorityHost string `json:"authority_host,omitempty"`
	// ManagedIdentity takes the tokens of the managed identity of the
	// machine the gateway runs on (system-assigned, or the user-assigned
	// one ClientID names) instead of a client secret.
	ManagedIdentity bool `json:"managed_identity,omitempty"`
}

// apiVersionV1 is the api_version that selects the v1 path.
const apiVersionV1 = "v1"

// provisionAzure checks an azure provider's endpoints, keys and
// api-version, and normalizes its endpoints as the portal shows them
// (with or without /openai or /openai/v1) to the resource's root URL.
func (a *App) provisionAzure(repl *caddy.Replacer, pc *ProviderConfig, p *providers.Provider) error {
	if len(p.BaseURLs) == 0 {
		return errors.New("an azure provider needs its resource endpoint, such as https://my-resource.openai.azure.com")
	}
	var entra *EntraConfig
	if pc.Azure != nil {
		entra = pc.Azure.Entra
	}
	switch {
	case entra != nil && len(p.APIKeys) > 0:
		return errors.New("an azure provider authenticates with api_key or entra, not both")
	case entra == nil && len(p.APIKeys) == 0:
		return errors.New("an azure provider needs its resource's api_key, or entra credentials")
	}
	for i, u := range p.BaseURLs {
		e, err := azure.ParseEndpoint(u)
		if err != nil {
			return fmt.Errorf("endpoint %q: %w", u, err)
		}
		p.BaseURLs[i] = e
	}
	ep := azureEndpoint{apiVersion: azure.DefaultAPIVersion}
	if pc.Azure != nil {
		switch v := pc.Azure.APIVersion; v {
		case "":
		case apiVersionV1:
			ep.v1, ep.apiVersion = true, ""
		default:
			if err := azure.CheckAPIVersion(v); err != nil {
				return fmt.Errorf("api_version %q: %w", v, err)
			}
			ep.apiVersion = v
		}
	}
	if entra != nil {
		var err error
		if ep.tokens, err = entraTokens(repl, entra); err != nil {
			return fmt.Errorf("entra: %w", err)
		}
	}
	p.Endpoint = ep
	return nil
}

// entraTokens makes the Entra ID credential of c, its secret expanded.
func entraTokens(repl *caddy.Replacer, c *EntraConfig) (*azure.Tokens, error) {
	o := azure.EntraOptions{ManagedIdentity: c.ManagedIdentity, AuthorityHost: c.AuthorityHost}
	var err error
	for _, f := range []struct {
		name     string
		src, dst *string
	}{{"tenant_id", &c.TenantID, &o.TenantID}, {"client_id", &c.ClientID, &o.ClientID}, {"client_secret", &c.ClientSecret, &o.ClientSecret}} {
		if *f.dst, err = expandOptional(repl, *f.src); err != nil {
			return nil, fmt.Errorf("%s: %w", f.name, err)
		}
	}
	return azure.NewTokens(o)
}

// azureEndpoint builds Azure OpenAI's chat requests: the deployment (the
// model's upstream id) and api-version in the URL, or the v1 path; the
// attempt's key in api-key.
type azureEndpoint struct {
	apiVersion string
	v1         bool
	// tokens, if set, replace the key: Entra ID bearer tokens.
	tokens *azure.Tokens
}

// NewRequest implements providers.Endpoint.
func (e azureEndpoint) NewRequest(ctx context.Context, a providers.Attempt, model string, stream bool, body []byte) (*http.Request, error) {
	ep := azure.Endpoint{URL: a.BaseURL, Key: a.APIKey, Tokens: e.tokens, APIVersion: e.apiVersion, V1: e.v1}
	return ep.NewRequest(ctx, model, stream, body)
}

// Authorize implements providers.Endpoint.
func (e azureEndpoint) Authorize(req *http.Request, a providers.Attempt) error {
	if e.tokens != nil {
		return e.tokens.SetAuth(req)
	}
	azure.SetAuth(req.Header, a.APIKey)
	return nil
}

// parseEntra reads an azure provider's entra block:
//
//	entra {
//		tenant_id <id>
//		client_id <id>
//		client_secret <secret>
//		authority_host <url>
//		managed_identity
//	}
func parseEntra(d *caddyfile.Dispenser, p *ProviderConfig) error {
	if d.NextArg() {
		return d.ArgErr()
	}
	if p.Azure == nil {
		p.Azure = &AzureConfig{}
	}
	e := &EntraConfig{}
	p.Azure.Entra = e
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		name := d.Val()
		if name == "managed_identity" {
			if d.NextArg() {
				return d.ArgErr()
			}
			e.ManagedIdentity = true
			continue
		}
		var v string
		if !d.AllArgs(&v) {
			return d.ArgErr()
		}
		switch name {
		case "tenant_id":
			e.TenantID = v
		case "client_id":
			e.ClientID = v
		case "client_secret":
			e.ClientSecret = v
		case "authority_host":
			e.AuthorityHost = v
		default:
			return d.Errf("entra: unknown option %q", name)
		}
	}
	return nil
}

// healthPath is the default health check path of an azure provider: the
// resource's model list.
func (e azureEndpoint) healthPath() string {
	if e.v1 {
		return "/openai/v1/models"
	}
	return "/openai/models?api-version=" + e.apiVersion
}

// azureHealthPath is the default health check path of the azure provider
// name: its resource's model list.
func (a *App) azureHealthPath(name string) string {
	if a.routes != nil {
		if p := a.routes.Provider(name); p != nil {
			if e, ok := p.Endpoint.(azureEndpoint); ok {
				return e.healthPath()
			}
		}
	}
	return "/openai/v1/models"
}
