package caddymodule

import (
	"context"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/caddy-air/caddy-air/dialect/azure"
	"github.com/caddy-air/caddy-air/providers"
)

func TestEntraCaddyfile(t *testing.T) {
	for i, tc := range []struct {
		input   string
		want    *EntraConfig
		wantErr string
	}{
		{"air {\n provider az {\n protocol azure\n endpoint https://r.openai.azure.com\n entra {\n tenant_id t1\n client_id c1\n client_secret {env.AZ_SECRET}\n authority_host https://login.microsoftonline.us\n }\n }\n}",
			&EntraConfig{TenantID: "t1", ClientID: "c1", ClientSecret: "{env.AZ_SECRET}", AuthorityHost: "https://login.microsoftonline.us"}, ""},
		{"air {\n provider az {\n protocol azure\n api_version v1\n entra {\n managed_identity\n client_id uami\n }\n }\n}",
			&EntraConfig{ManagedIdentity: true, ClientID: "uami"}, ""},
		{"air {\n provider az {\n entra {\n tenant t1\n }\n }\n}", nil, `unknown option "tenant"`},
		{"air {\n provider az {\n entra {\n managed_identity yes\n }\n }\n}", nil, "wrong argument count"},
		{"air {\n provider az {\n entra {\n client_id a b\n }\n }\n}", nil, "wrong argument count"},
		{"air {\n provider az {\n entra x\n }\n}", nil, "wrong argument count"},
	} {
		a := new(App)
		err := a.UnmarshalCaddyfile(caddyfile.NewTestDispenser(tc.input))
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("Test %d: error %v, want %q", i, err, tc.wantErr)
			}
			continue
		}
		if err != nil || len(a.Providers) != 1 || a.Providers[0].Azure == nil || !reflect.DeepEqual(a.Providers[0].Azure.Entra, tc.want) {
			t.Errorf("Test %d: %v %+v", i, err, a.Providers)
		}
	}
}

func TestEntraProvision(t *testing.T) {
	ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
	defer cancel()
	t.Setenv("AIR_TEST_AZ_SECRET", "s3cret")
	az := func(keys []string, e *EntraConfig) ProviderConfig {
		return ProviderConfig{Protocol: "azure", BaseURLs: []string{"https://r.openai.azure.com"}, APIKeys: keys, Azure: &AzureConfig{Entra: e}}
	}
	secret := &EntraConfig{TenantID: "t1", ClientID: "c1", ClientSecret: "{env.AIR_TEST_AZ_SECRET}"}
	for i, tc := range []struct {
		pc      ProviderConfig
		wantErr string
	}{
		{az(nil, secret), ""},
		{az(nil, &EntraConfig{ManagedIdentity: true}), ""},
		{az([]string{"k"}, secret), "api_key or entra, not both"},
		{az(nil, &EntraConfig{TenantID: "t1", ClientID: "c1"}), "entra: azure: entra needs tenant_id, client_id and client_secret"},
		{az(nil, &EntraConfig{TenantID: "t1", ClientID: "c1", ClientSecret: "{env.AIR_TEST_AZ_NO_SECRET}"}), "entra: client_secret: environment variable AIR_TEST_AZ_NO_SECRET is unset"},
		{az(nil, &EntraConfig{TenantID: "t1", ClientID: "c1", ClientSecret: "s", AuthorityHost: "http://login.example"}), "authority_host must be an https URL"},
		{az(nil, &EntraConfig{ManagedIdentity: true, TenantID: "t1"}), "a managed identity takes no tenant_id"},
		{ProviderConfig{Protocol: "bedrock", Region: "us-east-1", Azure: &AzureConfig{Entra: secret}}, "entra is an azure setting, not a bedrock one"},
	} {
		pc := tc.pc
		pc.Name = "p"
		a := &App{Storage: &Storage{Dir: t.TempDir()}, Providers: []*ProviderConfig{&pc}}
		err := a.Provision(ctx)
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("Test %d: %v", i, err)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("Test %d: error %v, want one containing %q", i, err, tc.wantErr)
		case tc.wantErr == "":
			if e, ok := a.routes.Provider("p").Endpoint.(azureEndpoint); !ok || e.tokens == nil {
				t.Errorf("Test %d: endpoint %+v has no tokens", i, a.routes.Provider("p").Endpoint)
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

// An entra provider's health checks and requests carry its bearer token,
// not a key.
func TestEntraAuthorize(t *testing.T) {
	e := &azure.EntraServer{TenantID: "t", Header: "h"}
	msi := httptest.NewServer(e)
	defer msi.Close()
	t.Setenv("IDENTITY_ENDPOINT", msi.URL+"/msi/token")
	t.Setenv("IDENTITY_HEADER", "h")
	tokens, err := entraTokens(caddy.NewReplacer(), &EntraConfig{ManagedIdentity: true, ClientID: "uami-health"})
	if err != nil {
		t.Fatal(err)
	}
	ep := azureEndpoint{apiVersion: azure.DefaultAPIVersion, tokens: tokens}
	req := httptest.NewRequest(http.MethodGet, "https://r.openai.azure.com"+ep.healthPath(), nil)
	if err := ep.Authorize(req, providers.Attempt{APIKey: "unused"}); err != nil {
		t.Fatal(err)
	}
	tok, ok := strings.CutPrefix(req.Header.Get("Authorization"), "Bearer ")
	if !ok || !e.Valid(tok) || req.Header.Get(azure.APIKeyHeader) != "" {
		t.Errorf("health check headers %v", req.Header)
	}
}
