package vertex

import (
	"bytes"
	"context"
	"errors"
	"net/http"

	"github.com/caddy-air/caddy-air/dialect/gemini"
)

// Endpoint is one configured Vertex AI provider: its project and region,
// where its requests go, and its tokens.
type Endpoint struct {
	// BaseURL is BaseURL(Region), or a test server's or Private Service
	// Connect endpoint's URL.
	BaseURL string
	// Project and Region name the Vertex AI location.
	Project, Region string
	// Tokens issues the bearer tokens.
	Tokens *Tokens
}

// NewRequest returns the generateContent (or streamGenerateContent?alt=sse)
// request of body, an EncodeRequest result, for model, with a current
// bearer token (fetched first if none is cached, bounded by ctx).
func (e *Endpoint) NewRequest(ctx context.Context, model string, stream bool, body []byte) (*http.Request, error) {
	if e.Tokens == nil {
		return nil, errors.New("vertex: endpoint has no credentials")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, URL(e.BaseURL, e.Project, e.Region, model, stream), bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	gemini.SetHeaders(req.Header, stream)
	if err := e.Tokens.SetAuth(req); err != nil {
		return nil, err
	}
	return req, nil
}
