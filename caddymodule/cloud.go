package caddymodule

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"

	"github.com/caddyserver/caddy/v2"
	"github.com/tidwall/sjson"

	"github.com/caddy-air/caddy-air/dialect/authn"
	"github.com/caddy-air/caddy-air/dialect/gemini"
	"github.com/caddy-air/caddy-air/dialect/vertex"
	"github.com/caddy-air/caddy-air/providers"
)

// cloudEndpoint checks the settings of pc, a cloud provider (gemini,
// vertex), and makes p's endpoint, filling its default base URL.
func (a *App) cloudEndpoint(repl *caddy.Replacer, pc *ProviderConfig, p *providers.Provider) error {
	if pc.Protocol != providers.ProtocolVertex && (pc.Project != "" || pc.Region != "" || pc.CredentialsFile != "" || pc.TokenURL != "") {
		return fmt.Errorf("provider %s: project, region, credentials_file and token_url are vertex settings", pc.Name)
	}
	switch pc.Protocol {
	case providers.ProtocolGemini:
		if len(p.APIKeys) == 0 {
			return fmt.Errorf("provider %s: a gemini provider needs an api_key (Google AI Studio's)", pc.Name)
		}
		if len(p.BaseURLs) == 0 {
			p.BaseURLs = []string{gemini.BaseURL}
		}
		p.Endpoint = geminiEndpoint{}
		return nil
	case providers.ProtocolVertex:
		return a.vertexEndpoint(repl, pc, p)
	}
	return nil
}

// vertexEndpoint makes a Vertex AI provider's endpoint: its project and
// region, and its tokens, from a service account key file or the
// application default credentials.
func (a *App) vertexEndpoint(repl *caddy.Replacer, pc *ProviderConfig, p *providers.Provider) error {
	if len(p.APIKeys) > 0 {
		return fmt.Errorf("provider %s: a vertex provider takes no api_key: it authenticates with credentials_file or the application default credentials", pc.Name)
	}
	var err error
	e := vertexEndpoint{}
	if e.region, err = expandOptional(repl, pc.Region); err != nil {
		return fmt.Errorf("provider %s: region: %w", pc.Name, err)
	}
	if e.region == "" {
		return fmt.Errorf("provider %s: a vertex provider needs a region (such as us-central1, or global)", pc.Name)
	}
	o := vertex.Options{}
	if pc.CredentialsFile != "" {
		path, err := expand(repl, pc.CredentialsFile)
		if err != nil {
			return fmt.Errorf("provider %s: credentials_file: %w", pc.Name, err)
		}
		key, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("provider %s: credentials_file: %w", pc.Name, err)
		}
		if pc.TokenURL != "" {
			if key, err = sjson.SetBytes(key, "token_uri", pc.TokenURL); err != nil {
				return fmt.Errorf("provider %s: token_url: %w", pc.Name, err)
			}
		}
		if e.tokens, err = vertex.FromServiceAccountJSON(key, o); err != nil {
			return fmt.Errorf("provider %s: %w", pc.Name, err)
		}
	} else {
		if pc.TokenURL != "" {
			return fmt.Errorf("provider %s: token_url overrides the token endpoint of a credentials_file, and none is set", pc.Name)
		}
		if e.tokens, err = vertex.FromDefault(o); err != nil {
			return fmt.Errorf("provider %s: no credentials_file, and %w", pc.Name, err)
		}
	}
	if e.project, err = expandOptional(repl, pc.Project); err != nil {
		return fmt.Errorf("provider %s: project: %w", pc.Name, err)
	}
	if e.project == "" {
		e.project = e.tokens.ProjectID(context.Background())
	}
	if e.project == "" {
		return fmt.Errorf("provider %s: a vertex provider needs a project (its credentials name none)", pc.Name)
	}
	if len(p.BaseURLs) == 0 {
		p.BaseURLs = []string{vertex.BaseURL(e.region)}
	}
	p.Endpoint = e
	return nil
}

// expandOptional is expand for a setting that may be empty.
func expandOptional(repl *caddy.Replacer, s string) (string, error) {
	if s == "" {
		return "", nil
	}
	return expand(repl, s)
}

// geminiEndpoint builds Google AI Studio's requests: the model in the
// URL, the attempt's key in x-goog-api-key.
type geminiEndpoint struct{}

// NewRequest implements providers.Endpoint.
func (geminiEndpoint) NewRequest(ctx context.Context, a providers.Attempt, model string, stream bool, body []byte) (*http.Request, error) {
	e := gemini.Endpoint{BaseURL: a.BaseURL, APIKey: a.APIKey}
	return e.NewRequest(ctx, model, stream, body)
}

// Authorize implements providers.Endpoint.
func (geminiEndpoint) Authorize(req *http.Request, a providers.Attempt) error {
	authn.SetAuth(req.Header, providers.ProtocolGemini, a.APIKey, nil)
	return nil
}

// vertexEndpoint builds Vertex AI's requests: the project, region and
// model in the URL, a current OAuth2 bearer token.
type vertexEndpoint struct {
	project, region string
	tokens          *vertex.Tokens
}

// NewRequest implements providers.Endpoint.
func (v vertexEndpoint) NewRequest(ctx context.Context, a providers.Attempt, model string, stream bool, body []byte) (*http.Request, error) {
	e := vertex.Endpoint{BaseURL: a.BaseURL, Project: v.project, Region: v.region, Tokens: v.tokens}
	return e.NewRequest(ctx, model, stream, body)
}

// Authorize implements providers.Endpoint.
func (v vertexEndpoint) Authorize(req *http.Request, _ providers.Attempt) error {
	if v.tokens == nil {
		return errors.New("vertex: no credentials")
	}
	return v.tokens.SetAuth(req)
}

// Interface guards.
var (
	_ providers.Endpoint = geminiEndpoint{}
	_ providers.Endpoint = vertexEndpoint{}
)
