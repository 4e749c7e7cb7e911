package bedrock

import (
	"bytes"
	"context"
	"errors"
	"net/http"
)

// Endpoint is one configured Bedrock provider: where its requests go and
// how they are signed.
type Endpoint struct {
	// BaseURL is the runtime endpoint: BaseURL(region), or a test
	// server's or VPC endpoint's URL.
	BaseURL string
	// Signer signs for the provider's region and credentials.
	Signer *Signer
}

// NewRequest returns the signed Converse (or ConverseStream) request of
// body, an EncodeRequest result, for modelID. It is signed last: a
// header set on it afterwards is not signed (which Bedrock allows), but
// one changed afterwards breaks the signature, as does a Host rewritten
// by a proxy.
func (e *Endpoint) NewRequest(ctx context.Context, modelID string, stream bool, body []byte) (*http.Request, error) {
	if e.Signer == nil {
		return nil, errors.New("bedrock: endpoint has no signer")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, URL(e.BaseURL, modelID, stream), bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header["Content-Type"] = []string{"application/json"}
	if stream {
		req.Header["Accept"] = []string{StreamContentType}
	} else {
		req.Header["Accept"] = []string{"application/json"}
	}
	if err := e.Signer.Sign(req, body); err != nil {
		return nil, err
	}
	return req, nil
}
