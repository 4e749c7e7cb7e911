// Package vertex is the air.dialects.vertex module: Gemini on Google
// Cloud's Vertex AI, its project and region in the URL, OAuth2 bearer
// tokens from a service account key or the application default
// credentials.
package vertex

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/tidwall/sjson"

	"github.com/caddy-air/caddy-air/caddymodule/airmod"
	"github.com/caddy-air/caddy-air/dialect/vertex"
	"github.com/caddy-air/caddy-air/providers"
)

func init() {
	caddy.RegisterModule(Vertex{})
}

// Vertex is a Vertex AI provider's settings.
type Vertex struct {
	// Project is the provider's Google Cloud project. Default: the project
	// its credentials name. Placeholders are expanded.
	Project string `json:"project,omitempty"`
	// Region is the provider's location, such as us-central1 or global.
	// Required. Placeholders are expanded.
	Region string `json:"region,omitempty"`
	// CredentialsFile is the path of the provider's service account key
	// (JSON). Default: the application default credentials
	// (GOOGLE_APPLICATION_CREDENTIALS, gcloud's, or the metadata server's).
	CredentialsFile string `json:"credentials_file,omitempty"`
	// TokenURL replaces the token endpoint (token_uri) of CredentialsFile,
	// for a private or fake OAuth2 endpoint.
	TokenURL string `json:"token_url,omitempty"`

	project, region string
	tokens          *vertex.Tokens
}

// CaddyModule returns the Caddy module information.
func (Vertex) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  airmod.DialectNamespace + "." + providers.ProtocolVertex,
		New: func() caddy.Module { return new(Vertex) },
	}
}

// Protocol implements airmod.Dialect.
func (*Vertex) Protocol() string { return providers.ProtocolVertex }

// Provision checks the region, loads the credentials (the key file, or
// the application default credentials) and finds the project.
func (v *Vertex) Provision(ctx caddy.Context) error {
	repl := caddy.NewReplacer()
	var err error
	if v.region, err = airmod.ExpandOptional(repl, v.Region); err != nil {
		return fmt.Errorf("region: %w", err)
	}
	if v.region == "" {
		return errors.New("a vertex provider needs a region (such as us-central1, or global)")
	}
	o := vertex.Options{}
	if v.CredentialsFile != "" {
		path, err := airmod.Expand(repl, v.CredentialsFile)
		if err != nil {
			return fmt.Errorf("credentials_file: %w", err)
		}
		key, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("credentials_file: %w", err)
		}
		if v.TokenURL != "" {
			if key, err = sjson.SetBytes(key, "token_uri", v.TokenURL); err != nil {
				return fmt.Errorf("token_url: %w", err)
			}
		}
		if v.tokens, err = vertex.FromServiceAccountJSON(key, o); err != nil {
			return err
		}
	} else {
		if v.TokenURL != "" {
			return errors.New("token_url overrides the token endpoint of a credentials_file, and none is set")
		}
		if v.tokens, err = vertex.FromDefault(o); err != nil {
			return fmt.Errorf("no credentials_file, and %w", err)
		}
	}
	if v.project, err = airmod.ExpandOptional(repl, v.Project); err != nil {
		return fmt.Errorf("project: %w", err)
	}
	if v.project == "" {
		v.project = v.tokens.ProjectID(ctx)
	}
	if v.project == "" {
		return errors.New("a vertex provider needs a project (its credentials name none)")
	}
	return nil
}

// Setup implements airmod.Dialect: no key (tokens authenticate); the base
// URL defaults to the region's endpoint.
func (v *Vertex) Setup(p *providers.Provider, _ airmod.SetupOptions) error {
	if len(p.APIKeys) > 0 {
		return errors.New("a vertex provider takes no api_key: it authenticates with credentials_file or the application default credentials")
	}
	if len(p.BaseURLs) == 0 {
		p.BaseURLs = []string{vertex.BaseURL(v.region)}
	}
	p.Endpoint = endpoint{project: v.project, region: v.region, tokens: v.tokens}
	return nil
}

// UnmarshalCaddyfile reads the vertex settings of a provider block:
//
//	project <gcp-project>
//	region <gcp-region>
//	credentials_file <service-account.json>
//	token_url <url>
func (v *Vertex) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	return airmod.ParseSettings(d, providers.ProtocolVertex, func(name, val string) bool {
		switch name {
		case "project":
			v.Project = val
		case "region":
			v.Region = val
		case "credentials_file":
			v.CredentialsFile = val
		case "token_url":
			v.TokenURL = val
		default:
			return false
		}
		return true
	})
}

// endpoint builds Vertex AI's requests: the project, region and model in
// the URL, a current OAuth2 bearer token.
type endpoint struct {
	project, region string
	tokens          *vertex.Tokens
}

// NewRequest implements providers.Endpoint.
func (e endpoint) NewRequest(ctx context.Context, a providers.Attempt, model string, stream bool, body []byte) (*http.Request, error) {
	ep := vertex.Endpoint{BaseURL: a.BaseURL, Project: e.project, Region: e.region, Tokens: e.tokens}
	return ep.NewRequest(ctx, model, stream, body)
}

// Authorize implements providers.Endpoint.
func (e endpoint) Authorize(req *http.Request, _ providers.Attempt) error {
	if e.tokens == nil {
		return errors.New("vertex: no credentials")
	}
	return e.tokens.SetAuth(req)
}

// Interface guards.
var (
	_ airmod.Dialect        = (*Vertex)(nil)
	_ caddy.Provisioner     = (*Vertex)(nil)
	_ caddyfile.Unmarshaler = (*Vertex)(nil)
	_ providers.Endpoint    = endpoint{}
)
