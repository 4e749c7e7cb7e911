package routing

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/caddy-air/caddy-air/providers"
)

// recordRT answers 200 and records the requests.
type recordRT struct{ reqs []*http.Request }

func (r *recordRT) RoundTrip(req *http.Request) (*http.Response, error) {
	r.reqs = append(r.reqs, req)
	return &http.Response{StatusCode: 200, Body: io.NopCloser(strings.NewReader("{}"))}, nil
}

// tokenEndpoint authenticates with a bearer token, or fails.
type tokenEndpoint struct{ fail bool }

func (e tokenEndpoint) NewRequest(context.Context, providers.Attempt, string, bool, []byte) (*http.Request, error) {
	return nil, errors.New("not for health checks")
}

func (e tokenEndpoint) Authorize(req *http.Request, a providers.Attempt) error {
	if e.fail {
		return errors.New("no token")
	}
	req.Header.Set("Authorization", "Bearer token-for-"+a.BaseURL)
	return nil
}

// TestProbeAuthenticates: a health check carries the provider's
// credentials: its protocol's key header, or its endpoint's (a cloud's
// bearer token); an endpoint that cannot authenticate fails the check
// without a request.
func TestProbeAuthenticates(t *testing.T) {
	for i, tc := range []struct {
		p           *providers.Provider
		key         string
		header, val string
		ok          bool
	}{
		{&providers.Provider{Protocol: "openai"}, "sk-1", "Authorization", "Bearer sk-1", true},
		{&providers.Provider{Protocol: "anthropic"}, "ak-1", "X-Api-Key", "ak-1", true},
		{&providers.Provider{Protocol: "gemini"}, "AIza-1", "X-Goog-Api-Key", "AIza-1", true},
		{&providers.Provider{Protocol: "vertex", Endpoint: tokenEndpoint{}}, "", "Authorization", "Bearer token-for-https://v.example", true},
		{&providers.Provider{Protocol: "vertex", Endpoint: tokenEndpoint{fail: true}}, "", "", "", false},
	} {
		rt := &recordRT{}
		ok := probe(context.Background(), rt, tc.p, "https://v.example", tc.key, HealthCheck{Path: "/models", Timeout: DefaultHealthTimeout})
		if ok != tc.ok {
			t.Errorf("Test %d: probe %t, want %t", i, ok, tc.ok)
		}
		if !tc.ok {
			if len(rt.reqs) != 0 {
				t.Errorf("Test %d: an unauthenticated check was sent", i)
			}
			continue
		}
		if len(rt.reqs) != 1 || rt.reqs[0].Header.Get(tc.header) != tc.val || rt.reqs[0].URL.String() != "https://v.example/models" {
			t.Errorf("Test %d: request %+v", i, rt.reqs)
		}
	}
}
