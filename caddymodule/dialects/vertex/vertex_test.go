package vertex

import (
	"context"
	"net/http"
	"testing"

	"github.com/caddyserver/caddy/v2"

	"github.com/caddy-air/caddy-air/caddymodule/airmod"
	"github.com/caddy-air/caddy-air/internal/googletest"
	"github.com/caddy-air/caddy-air/providers"
)

// serviceAccount writes a service account key file of project sa-project
// and returns its path.
func serviceAccount(t *testing.T) string {
	return googletest.KeyFile(t, googletest.NewKey(t), googletest.Account{Email: "sa@sa-project.iam.gserviceaccount.com",
		Project: "sa-project", TokenURI: "https://oauth2.googleapis.com/token"})
}

// TestApplicationDefaultCredentials: without credentials_file, a vertex
// provider uses the application default credentials, and their project
// when it names none; its base URL defaults to its region's endpoint.
func TestApplicationDefaultCredentials(t *testing.T) {
	ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
	defer cancel()
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", serviceAccount(t))
	v := &Vertex{Region: "us-east5"}
	if err := v.Provision(ctx); err != nil {
		t.Fatal(err)
	}
	p := &providers.Provider{}
	if err := v.Setup(p, airmod.SetupOptions{}); err != nil {
		t.Fatal(err)
	}
	e, ok := p.Endpoint.(endpoint)
	if !ok || e.project != "sa-project" || e.region != "us-east5" || e.tokens == nil || p.BaseURLs[0] != "https://us-east5-aiplatform.googleapis.com" {
		t.Fatalf("endpoint %+v, base URLs %q", p.Endpoint, p.BaseURLs)
	}
}

// TestEndpointWithoutCredentials: a vertex endpoint without credentials
// makes no request and authorizes no health check.
func TestEndpointWithoutCredentials(t *testing.T) {
	v := endpoint{project: "p1", region: "r1"}
	if _, err := v.NewRequest(context.Background(), providers.Attempt{BaseURL: "https://v.example"}, "gemini-2.5-pro", false, []byte(`{}`)); err == nil {
		t.Error("a vertex endpoint without credentials made a request")
	}
	h, _ := http.NewRequest(http.MethodGet, "https://v.example/v1/models", nil)
	if err := v.Authorize(h, providers.Attempt{}); err == nil {
		t.Error("a vertex endpoint without credentials authorized a health check")
	}
}
