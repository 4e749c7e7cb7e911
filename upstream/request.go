package upstream

import (
	"context"
	"fmt"
	"io"
	"net/http"

	"github.com/caddy-air/caddy-air/dialect/authn"
	"github.com/caddy-air/caddy-air/providers"
	"github.com/caddy-air/caddy-air/routing"
)

// NewRequest builds a request of method to attempt a of provider p:
// a.BaseURL+path, with body (nil for none) and the attempt's credentials
// (Authorize). The caller sets its content headers.
func NewRequest(ctx context.Context, p *providers.Provider, a providers.Attempt, method, path string, body io.Reader) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, method, a.BaseURL+path, body)
	if err != nil {
		return nil, err
	}
	if err := Authorize(req, p, a); err != nil {
		return nil, err
	}
	return req, nil
}

// Authorize sets the credentials of req, a request to attempt a of
// provider p: the ones its endpoint sets (a cloud's signature or key
// header, providers.Endpoint.Authorize), or else the key headers of its
// protocol (dialect/authn), none when the attempt has no key.
func Authorize(req *http.Request, p *providers.Provider, a providers.Attempt) error {
	if p.Endpoint != nil {
		return p.Endpoint.Authorize(req, a)
	}
	if a.APIKey != "" {
		authn.SetAuth(req.Header, p.Protocol, a.APIKey, nil)
	}
	return nil
}

// Send sends req through rt (nil means http.DefaultTransport) and
// returns the answer. It is a RoundTrip: redirects are not followed. A
// final 1xx answer (101 Switching Protocols to a request that asked for
// no upgrade) is an error, not an answer: the connection it hands over
// would only fall silent.
func Send(rt http.RoundTripper, req *http.Request) (*http.Response, error) {
	if rt == nil {
		rt = http.DefaultTransport
	}
	resp, err := rt.RoundTrip(req)
	if err == nil && resp.StatusCode < http.StatusOK {
		code := resp.StatusCode
		resp.Body.Close()
		return nil, fmt.Errorf("upstream answered %d to a request that asked for no upgrade", code)
	}
	return resp, err
}

// Prober is the routing health checks' probe (routing.Prober) through
// rt: a GET of path below the attempt's base URL, with the provider's
// credentials (NewRequest), sent by Send; it passes when the answer is a
// 2xx. A provider whose endpoint cannot authenticate fails the check
// without a request.
func Prober(rt http.RoundTripper) routing.Prober {
	return func(ctx context.Context, p *providers.Provider, a providers.Attempt, path string) bool {
		req, err := NewRequest(ctx, p, a, http.MethodGet, path, nil)
		if err != nil {
			return false
		}
		resp, err := Send(rt, req)
		if err != nil {
			return false
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
		return resp.StatusCode >= 200 && resp.StatusCode < 300
	}
}
