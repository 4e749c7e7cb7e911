package caddymodule

import (
	"context"
	"errors"
	"fmt"
	"net/http"

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
}

// apiVersionV1 is the api_version that selects the v1 path.
const apiVersionV1 = "v1"

// provisionAzure checks an azure provider's endpoints, keys and
// api-version, and normalizes its endpoints as the portal shows them
// (with or without /openai or /openai/v1) to the resource's root URL.
func (a *App) provisionAzure(pc *ProviderConfig, p *providers.Provider) error {
	if len(p.BaseURLs) == 0 {
		return errors.New("an azure provider needs its resource endpoint, such as https://my-resource.openai.azure.com")
	}
	if len(p.APIKeys) == 0 {
		return errors.New("an azure provider needs its resource's api_key")
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
	p.Endpoint = ep
	return nil
}

// azureEndpoint builds Azure OpenAI's chat requests: the deployment (the
// model's upstream id) and api-version in the URL, or the v1 path; the
// attempt's key in api-key.
type azureEndpoint struct {
	apiVersion string
	v1         bool
}

// NewRequest implements providers.Endpoint.
func (e azureEndpoint) NewRequest(ctx context.Context, a providers.Attempt, model string, stream bool, body []byte) (*http.Request, error) {
	ep := azure.Endpoint{URL: a.BaseURL, Key: a.APIKey, APIVersion: e.apiVersion, V1: e.v1}
	return ep.NewRequest(ctx, model, stream, body)
}

// Authorize implements providers.Endpoint.
func (e azureEndpoint) Authorize(req *http.Request, a providers.Attempt) error {
	azure.SetAuth(req.Header, a.APIKey)
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
	if a.cfg.Routes != nil {
		if p := a.cfg.Routes.Provider(name); p != nil {
			if e, ok := p.Endpoint.(azureEndpoint); ok {
				return e.healthPath()
			}
		}
	}
	return "/openai/v1/models"
}
