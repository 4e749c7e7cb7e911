package caddymodule

import (
	"errors"
	"fmt"

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
	ep := &azure.Endpoint{}
	if pc.Azure != nil {
		switch v := pc.Azure.APIVersion; v {
		case "":
		case apiVersionV1:
			ep.V1 = true
		default:
			if err := azure.CheckAPIVersion(v); err != nil {
				return fmt.Errorf("api_version %q: %w", v, err)
			}
			ep.APIVersion = v
		}
	}
	pc.azureEndpoint = ep
	return nil
}
