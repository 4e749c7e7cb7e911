package caddymodule

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/caddy-air/caddy-air/dialect/azure"
	"github.com/caddy-air/caddy-air/providers"
)

// TestEntraCaddyfile: an azure provider's entra block reaches its dialect
// object as written, and its syntax errors are refused.
func TestEntraCaddyfile(t *testing.T) {
	for i, tc := range []struct {
		input   string
		want    string // the dialect object
		wantErr string
	}{
		{"protocol azure\n endpoint https://r.openai.azure.com\n entra {\n tenant_id t1\n client_id c1\n client_secret {env.AZ_SECRET}\n authority_host https://login.microsoftonline.us\n }",
			`{"entra":{"authority_host":"https://login.microsoftonline.us","client_id":"c1","client_secret":"{env.AZ_SECRET}","tenant_id":"t1"},"protocol":"azure"}`, ""},
		{"entra {\n managed_identity\n client_id uami\n }\n api_version v1\n protocol azure",
			`{"api_version":"v1","entra":{"client_id":"uami","managed_identity":true},"protocol":"azure"}`, ""},
		{"protocol azure\n entra {\n tenant t1\n }", "", `unknown option "tenant"`},
		{"protocol azure\n entra {\n managed_identity yes\n }", "", "wrong argument count"},
		{"protocol azure\n entra {\n client_id a b\n }", "", "wrong argument count"},
		{"protocol azure\n entra x", "", "wrong argument count"},
		// Bedrock's settings take one argument each, not a block.
		{"protocol bedrock\n region us-east-1\n entra {\n managed_identity\n }", "", "provider az: wrong argument count or unexpected line ending after 'entra'"},
		{"protocol openai\n base_url https://x/v1\n entra", "", "entra is not a setting of openai providers"},
	} {
		a := new(App)
		err := a.UnmarshalCaddyfile(caddyfile.NewTestDispenser("air {\n provider az {\n " + tc.input + "\n }\n}"))
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("Test %d: error %v, want %q", i, err, tc.wantErr)
			}
			continue
		}
		if err != nil || len(a.Providers) != 1 || string(a.Providers[0].DialectRaw) != tc.want {
			t.Errorf("Test %d: %v, dialect %s, want %s", i, err, a.Providers[0].DialectRaw, tc.want)
		}
	}
}

// TestEntraProvision: an azure provider's entra settings are checked when
// the config loads, never with the secret in the error; a managed
// identity provider's requests and health checks carry its bearer token,
// not a key.
func TestEntraProvision(t *testing.T) {
	ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
	defer cancel()
	t.Setenv("AIR_TEST_AZ_SECRET", "s3cret")
	es := &azure.EntraServer{TenantID: "t", Header: "h"}
	msi := httptest.NewServer(es)
	defer msi.Close()
	t.Setenv("IDENTITY_ENDPOINT", msi.URL+"/msi/token")
	t.Setenv("IDENTITY_HEADER", "h")
	const secret = `"entra":{"tenant_id":"t1","client_id":"c1","client_secret":"{env.AIR_TEST_AZ_SECRET}"}`
	az := []string{"https://r.openai.azure.com"}
	for i, tc := range []struct {
		dialect string
		keys    []string
		wantErr string
		// bearer: the provider's requests carry an Entra ID token.
		bearer bool
	}{
		{dialect: `{"protocol":"azure",` + secret + `}`},
		{dialect: `{"protocol":"azure","entra":{"managed_identity":true,"client_id":"uami"}}`, bearer: true},
		{dialect: `{"protocol":"azure",` + secret + `}`, keys: []string{"k"}, wantErr: "api_key or entra, not both"},
		{dialect: `{"protocol":"azure","entra":{"tenant_id":"t1","client_id":"c1"}}`, wantErr: "entra: azure: entra needs tenant_id, client_id and client_secret"},
		{dialect: `{"protocol":"azure","entra":{"tenant_id":"t1","client_id":"c1","client_secret":"{env.AIR_TEST_AZ_NO_SECRET}"}}`,
			wantErr: "entra: client_secret: environment variable AIR_TEST_AZ_NO_SECRET is unset"},
		{dialect: `{"protocol":"azure","entra":{"tenant_id":"t1","client_id":"c1","client_secret":"s","authority_host":"http://login.example"}}`,
			wantErr: "authority_host must be an https URL"},
		{dialect: `{"protocol":"azure","entra":{"managed_identity":true,"tenant_id":"t1"}}`, wantErr: "a managed identity takes no tenant_id"},
		{dialect: `{"protocol":"bedrock","region":"us-east-1",` + secret + `}`, wantErr: `air.dialects.bedrock: json: unknown field "entra"`},
	} {
		pc := &ProviderConfig{Name: "p", BaseURLs: az, APIKeys: tc.keys, DialectRaw: json.RawMessage(tc.dialect), HealthCheck: &HealthCheckConfig{}}
		if strings.Contains(tc.dialect, "bedrock") {
			pc.BaseURLs, pc.HealthCheck = nil, nil
		}
		a := &App{StorageRaw: badgerJSON(t.TempDir()), Providers: []*ProviderConfig{pc}}
		err := a.Provision(ctx)
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("Test %d: %v", i, err)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("Test %d: error %v, want one containing %q", i, err, tc.wantErr)
		case tc.bearer:
			p := a.routes.Provider("p")
			req, _ := http.NewRequest(http.MethodGet, az[0]+a.routingOptions()["p"].HealthCheck.Path, nil)
			if err := p.Endpoint.Authorize(req, providers.Attempt{BaseURL: az[0]}); err != nil {
				t.Fatalf("Test %d: health check: %v", i, err)
			}
			tok, ok := strings.CutPrefix(req.Header.Get("Authorization"), "Bearer ")
			if !ok || !es.Valid(tok) || req.Header.Get(azure.APIKeyHeader) != "" {
				t.Errorf("Test %d: health check headers %v", i, req.Header)
			}
			chat, err := p.Endpoint.NewRequest(context.Background(), providers.Attempt{BaseURL: az[0]}, "m", false, []byte(`{}`))
			if err != nil || chat.Header.Get("Authorization") != "Bearer "+tok || chat.Header.Get(azure.APIKeyHeader) != "" {
				t.Errorf("Test %d: chat request %v (%v)", i, chat, err)
			}
		}
		if err != nil && strings.Contains(err.Error(), "s3cret") {
			t.Errorf("Test %d: the secret is in the error %v", i, err)
		}
		if err := a.Cleanup(); err != nil {
			t.Errorf("Test %d: cleanup: %v", i, err)
		}
	}
}
