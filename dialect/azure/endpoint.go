package azure

import (
	"bytes"
	"context"
	"net/http"
)

// Endpoint is one configured Azure OpenAI resource.
type Endpoint struct {
	// URL is the resource endpoint, as ParseEndpoint returns it.
	URL string
	// APIVersion is the deployment path's api-version (DefaultAPIVersion
	// if empty).
	APIVersion string
	// Key is the resource key, sent in api-key, when Tokens is nil.
	Key string
	// Tokens, if set, authenticate with Entra ID bearer tokens instead.
	Tokens *Tokens
	// V1 sends requests to the v1 path, where the body's model names the
	// deployment, instead of the deployment path.
	V1 bool
}

// NewRequest returns the chat completions request of body (OpenAI's
// shape) for deployment, which picks the deployment path's model; on the
// v1 path the body's model does, and deployment is not used.
func (e *Endpoint) NewRequest(ctx context.Context, deployment string, stream bool, body []byte) (*http.Request, error) {
	u := DeploymentURL(e.URL, deployment, "chat/completions", e.APIVersion)
	if e.V1 {
		u = V1URL(e.URL, "chat/completions")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header["Content-Type"] = []string{"application/json"}
	if stream {
		req.Header["Accept"] = []string{"text/event-stream"}
	}
	if e.Tokens != nil {
		if err := e.Tokens.SetAuth(req); err != nil {
			return nil, err
		}
		return req, nil
	}
	SetAuth(req.Header, e.Key)
	return req, nil
}
