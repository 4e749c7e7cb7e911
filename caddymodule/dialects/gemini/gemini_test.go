package gemini

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/caddy-air/caddy-air/caddymodule/airmod"
	"github.com/caddy-air/caddy-air/providers"
)

// TestEndpointAuthenticates: a gemini endpoint sends its key in
// x-goog-api-key, never in the URL.
func TestEndpointAuthenticates(t *testing.T) {
	p := &providers.Provider{APIKeys: []string{"AIza-1"}}
	if err := (Gemini{}).Setup(p, airmod.SetupOptions{}); err != nil || p.BaseURLs[0] != "https://generativelanguage.googleapis.com" {
		t.Fatalf("setup: %v, base URLs %q", err, p.BaseURLs)
	}
	req, err := p.Endpoint.NewRequest(context.Background(), providers.Attempt{BaseURL: "https://g.example", APIKey: "AIza-1"}, "gemini-2.5-flash", true, []byte(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	if req.URL.String() != "https://g.example/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse" || req.Header.Get("X-Goog-Api-Key") != "AIza-1" ||
		strings.Contains(req.URL.String(), "AIza") {
		t.Errorf("gemini request %s %v", req.URL, req.Header)
	}
	h, _ := http.NewRequest(http.MethodGet, "https://g.example/v1beta/models", nil)
	if err := p.Endpoint.Authorize(h, providers.Attempt{APIKey: "AIza-2"}); err != nil || h.Header.Get("X-Goog-Api-Key") != "AIza-2" {
		t.Errorf("gemini health check %v %v", h.Header, err)
	}
	if err := (Gemini{}).Setup(&providers.Provider{}, airmod.SetupOptions{}); err == nil || !strings.Contains(err.Error(), "needs an api_key") {
		t.Errorf("a gemini provider without a key: %v", err)
	}
}
