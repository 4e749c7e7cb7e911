package gemini

import (
	"bytes"
	"context"
	"net/http"
)

// Endpoint is one configured Gemini API provider: where its requests go
// and its key.
type Endpoint struct {
	// BaseURL is BaseURL, or a test server's URL.
	BaseURL string
	// APIKey is the AI Studio key, sent in x-goog-api-key (never in the
	// URL, where logs would keep it).
	APIKey string
}

// NewRequest returns the generateContent (or streamGenerateContent?alt=sse)
// request of body, an EncodeRequest result, for model.
func (e *Endpoint) NewRequest(ctx context.Context, model string, stream bool, body []byte) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, URL(e.BaseURL, model, stream), bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	SetHeaders(req.Header, stream)
	SetAuth(req.Header, e.APIKey)
	return req, nil
}

// SetHeaders writes the content headers of a request, shared with Vertex
// AI.
func SetHeaders(h http.Header, stream bool) {
	h["Content-Type"] = []string{"application/json"}
	if stream {
		h["Accept"] = []string{"text/event-stream"}
	} else {
		h["Accept"] = []string{"application/json"}
	}
}
