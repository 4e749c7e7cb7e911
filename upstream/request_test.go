package upstream

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/caddy-air/caddy-air/providers"
)

// signer is a providers.Endpoint that signs with a header of its own.
type signer struct{}

func (signer) NewRequest(context.Context, providers.Attempt, string, bool, []byte) (*http.Request, error) {
	return nil, nil
}

func (signer) Authorize(req *http.Request, a providers.Attempt) error {
	req.Header.Set("Api-Key", a.APIKey)
	return nil
}

// TestNewRequest: a request to an attempt carries the credentials its
// provider's dialect says: the endpoint's when it has one, else its
// protocol's key headers, none without a key.
func TestNewRequest(t *testing.T) {
	for _, tc := range []struct {
		name     string
		p        providers.Provider
		key      string
		header   string
		want     string
		noHeader []string
	}{
		{"openai bearer", providers.Provider{Protocol: providers.ProtocolOpenAI}, "sk-1", "Authorization", "Bearer sk-1", nil},
		{"anthropic key", providers.Provider{Protocol: providers.ProtocolAnthropic}, "sk-2", "X-Api-Key", "sk-2", []string{"Authorization"}},
		{"endpoint signs", providers.Provider{Protocol: providers.ProtocolOpenAI, Endpoint: signer{}}, "az-3", "Api-Key", "az-3", []string{"Authorization"}},
		{"no key", providers.Provider{Protocol: providers.ProtocolOpenAI}, "", "Authorization", "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := NewRequest(context.Background(), &tc.p, providers.Attempt{BaseURL: "https://up.example/v1", APIKey: tc.key},
				http.MethodGet, "/responses/resp_1", nil)
			if err != nil {
				t.Fatal(err)
			}
			if req.URL.String() != "https://up.example/v1/responses/resp_1" || req.Method != http.MethodGet {
				t.Errorf("request %s %s", req.Method, req.URL)
			}
			if got := req.Header.Get(tc.header); got != tc.want {
				t.Errorf("%s %q, want %q", tc.header, got, tc.want)
			}
			for _, h := range tc.noHeader {
				if v := req.Header.Get(h); v != "" {
					t.Errorf("%s %q set", h, v)
				}
			}
		})
	}
}

// roundTrip is a RoundTripper of a function.
type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestSend: a redirect is an answer, not followed; a final 1xx is an
// error, its body closed.
func TestSend(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/elsewhere", http.StatusFound)
	}))
	defer srv.Close()
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/models", nil)
	resp, err := Send(nil, req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound {
		t.Errorf("status %d, want the redirect itself", resp.StatusCode)
	}

	body := &closed{Reader: strings.NewReader("")}
	req, _ = http.NewRequest(http.MethodPost, "http://up.example/v1/chat/completions", nil)
	resp, err = Send(roundTrip(func(*http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: http.StatusSwitchingProtocols, Body: body, Header: http.Header{}}, nil
	}), req)
	if err == nil || resp != nil || !body.closed {
		t.Errorf("101: resp %v, err %v, body closed %v; want an error and the body closed", resp, err, body.closed)
	}
}

// closed is a body that records its Close.
type closed struct {
	io.Reader
	closed bool
}

func (c *closed) Close() error { c.closed = true; return nil }

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
		ok := Prober(rt)(context.Background(), tc.p, providers.Attempt{BaseURL: "https://v.example", APIKey: tc.key}, "/models")
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
