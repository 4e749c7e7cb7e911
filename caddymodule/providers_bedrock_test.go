package caddymodule

import (
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/caddy-air/caddy-air/providers"
)

// TestBedrockAzureCaddyfile: the bedrock and azure options of a provider
// block reach its dialect object as written (placeholders unexpanded),
// wherever they stand in the block; the parser checks only their syntax,
// and refuses an option the provider's protocol does not have.
func TestBedrockAzureCaddyfile(t *testing.T) {
	for i, tc := range []struct {
		input   string
		want    ProviderConfig
		wantErr string
	}{
		{input: "provider aws {\n protocol bedrock\n region us-west-2\n}",
			want: ProviderConfig{Name: "aws", DialectRaw: json.RawMessage(`{"protocol":"bedrock","region":"us-west-2"}`)}},
		{input: "provider aws {\n region {env.AWS_REGION}\n access_key_id {env.AK}\n secret_access_key {env.SK}\n session_token {env.ST}\n base_url https://vpce-1.bedrock-runtime.us-east-1.vpce.amazonaws.com\n protocol bedrock\n}",
			want: ProviderConfig{Name: "aws", BaseURLs: []string{"https://vpce-1.bedrock-runtime.us-east-1.vpce.amazonaws.com"},
				DialectRaw: json.RawMessage(`{"access_key_id":"{env.AK}","protocol":"bedrock","region":"{env.AWS_REGION}","secret_access_key":"{env.SK}","session_token":"{env.ST}"}`)}},
		{input: "provider az {\n protocol azure\n endpoint https://r.openai.azure.com\n api_key {env.AZ}\n api_version 2025-04-01-preview\n}",
			want: ProviderConfig{Name: "az", BaseURLs: []string{"https://r.openai.azure.com"}, APIKeys: []string{"{env.AZ}"},
				DialectRaw: json.RawMessage(`{"api_version":"2025-04-01-preview","protocol":"azure"}`)}},
		{input: "provider az {\n protocol azure\n base_url https://r.openai.azure.com/openai/v1\n api_key k\n api_version v1\n}",
			want: ProviderConfig{Name: "az", BaseURLs: []string{"https://r.openai.azure.com/openai/v1"}, APIKeys: []string{"k"},
				DialectRaw: json.RawMessage(`{"api_version":"v1","protocol":"azure"}`)}},
		{input: "provider aws {\n protocol bedrock\n region\n}", wantErr: "wrong argument count"},
		{input: "provider aws {\n protocol bedrock\n region us-east-1 eu-west-1\n}", wantErr: "wrong argument count"},
		{input: "provider aws {\n protocol bedrock\n access_key_id\n}", wantErr: "wrong argument count"},
		{input: "provider aws {\n protocol bedrock\n secret_access_key a b\n}", wantErr: "wrong argument count"},
		{input: "provider az {\n protocol azure\n api_version\n}", wantErr: "wrong argument count"},
		{input: "provider aws {\n protocol bedrock\n api_version v1\n}", wantErr: "provider aws: api_version is not a setting of bedrock providers, at Testfile:4"},
		{input: "provider az {\n protocol azure\n region eastus\n}", wantErr: "provider az: region is not a setting of azure providers"},
		{input: "provider o {\n protocol openai\n access_key_id a\n}", wantErr: "provider o: access_key_id is not a setting of openai providers"},
		{input: "provider o {\n protocol openai\n colour blue\n}", wantErr: "provider o: colour is not a setting of openai providers"},
		{input: "provider o {\n protocol mistral\n}", wantErr: `provider o: protocol "mistral" is not supported (this build knows anthropic, azure, bedrock, cohere, dashscope, gemini, openai, vertex)`},
		{input: "provider o {\n base_url http://x/v1\n}", wantErr: "provider o: protocol is required"},
	} {
		a := new(App)
		err := a.UnmarshalCaddyfile(caddyfile.NewTestDispenser("air {\n" + tc.input + "\n}"))
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("Test %d: error %v, want one containing %q", i, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("Test %d: %v", i, err)
			continue
		}
		if !reflect.DeepEqual(*a.Providers[0], tc.want) {
			t.Errorf("Test %d: parsed %+v (%s), want %+v (%s)", i, *a.Providers[0], a.Providers[0].DialectRaw, tc.want, tc.want.DialectRaw)
		}
	}
}

// TestBedrockAzureProvision: every semantic check of the bedrock and
// azure settings happens when the config is provisioned, with an error
// naming the provider and the setting; a provisioned provider signs for
// its region, or sends its api-version.
func TestBedrockAzureProvision(t *testing.T) {
	ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
	defer cancel()
	t.Setenv("AIR_TEST_AK", "AKIDEXAMPLE")
	t.Setenv("AIR_TEST_SK", "secret")
	t.Setenv("AIR_TEST_REGION", "eu-west-3")
	// The default chain reads only this test's environment and files.
	t.Setenv("AWS_CONFIG_FILE", t.TempDir()+"/none")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", t.TempDir()+"/none")
	t.Setenv("AWS_PROFILE", "")
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDDEFAULTCHAIN")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "default-secret")
	const static = `"access_key_id":"{env.AIR_TEST_AK}","secret_access_key":"{env.AIR_TEST_SK}"`
	for i, tc := range []struct {
		dialect  string
		pc       ProviderConfig
		wantErr  string // "" when the config loads
		wantURLs []string
		// wantScope is the credential scope a bedrock provider signs with;
		// wantPath the path of an azure provider's chat request.
		wantScope, wantPath string
	}{
		{dialect: `{"protocol":"bedrock","region":"us-east-1",` + static + `}`,
			wantURLs: []string{"https://bedrock-runtime.us-east-1.amazonaws.com"}, wantScope: "AKIDEXAMPLE/20"},
		{dialect: `{"protocol":"bedrock","region":"{env.AIR_TEST_REGION}",` + static + `}`,
			wantURLs: []string{"https://bedrock-runtime.eu-west-3.amazonaws.com"}, wantScope: "/eu-west-3/bedrock/aws4_request"},
		{dialect: `{"protocol":"bedrock","region":"us-gov-west-1","access_key_id":"a","secret_access_key":"b","session_token":"c"}`,
			pc: ProviderConfig{BaseURLs: []string{"http://127.0.0.1:9/fake"}}, wantURLs: []string{"http://127.0.0.1:9/fake"}, wantScope: "Credential=a/"},
		// The default chain: found in the environment.
		{dialect: `{"protocol":"bedrock","region":"us-east-1"}`, wantURLs: []string{"https://bedrock-runtime.us-east-1.amazonaws.com"}, wantScope: "Credential=AKIDDEFAULTCHAIN/"},
		{dialect: `{"protocol":"bedrock","region":"us-east-1"}`, pc: ProviderConfig{HealthCheck: &HealthCheckConfig{}}, wantErr: "provider p: a bedrock provider has no health_check"},
		{dialect: `{"protocol":"bedrock","region":"us-east-1","project":"p"}`, wantErr: `air.dialects.bedrock: json: unknown field "project"`},
		{dialect: `{"protocol":"bedrock",` + static + `}`, wantErr: "a bedrock provider needs its region"},
		{dialect: `{"protocol":"bedrock","region":"us-east-1 ",` + static + `}`, wantErr: `region "us-east-1 " is not an AWS region`},
		{dialect: `{"protocol":"bedrock","region":"https://x",` + static + `}`, wantErr: "is not an AWS region"},
		{dialect: `{"protocol":"bedrock","region":"{env.AIR_TEST_NO_REGION}",` + static + `}`, wantErr: "region: environment variable AIR_TEST_NO_REGION is unset"},
		{dialect: `{"protocol":"bedrock","region":"us-east-1","access_key_id":"a"}`, wantErr: "access_key_id and secret_access_key go together"},
		{dialect: `{"protocol":"bedrock","region":"us-east-1","session_token":"t"}`, wantErr: "go together"},
		{dialect: `{"protocol":"bedrock","region":"us-east-1","access_key_id":"{env.AIR_TEST_NO_AK}","secret_access_key":"s"}`,
			wantErr: "access_key_id: environment variable AIR_TEST_NO_AK is unset"},
		{dialect: `{"protocol":"bedrock","region":"us-east-1","access_key_id":"a","secret_access_key":"{env.AIR_TEST_NO_SK}"}`,
			wantErr: "secret_access_key: environment variable AIR_TEST_NO_SK"},
		{dialect: `{"protocol":"bedrock","region":"us-east-1"}`, pc: ProviderConfig{APIKeys: []string{"k"}}, wantErr: "provider p: a bedrock provider signs with AWS credentials"},
		{dialect: `{"protocol":"bedrock","region":"us-east-1","api_version":"v1"}`, wantErr: `unknown field "api_version"`},

		{dialect: `{"protocol":"azure"}`, pc: ProviderConfig{BaseURLs: []string{"https://r.openai.azure.com/openai/"}, APIKeys: []string{"k"}},
			wantURLs: []string{"https://r.openai.azure.com"}, wantPath: "/openai/deployments/m/chat/completions?api-version=2024-10-21"},
		{dialect: `{"protocol":"azure","api_version":"v1"}`, pc: ProviderConfig{BaseURLs: []string{"https://r.openai.azure.com/openai/v1"}, APIKeys: []string{"k"}},
			wantURLs: []string{"https://r.openai.azure.com"}, wantPath: "/openai/v1/chat/completions"},
		{dialect: `{"protocol":"azure","api_version":"2025-04-01-preview"}`, pc: ProviderConfig{BaseURLs: []string{"https://r.openai.azure.com"}, APIKeys: []string{"k"}},
			wantURLs: []string{"https://r.openai.azure.com"}, wantPath: "/openai/deployments/m/chat/completions?api-version=2025-04-01-preview"},
		{dialect: `{"protocol":"azure","api_version":"latest"}`, pc: ProviderConfig{BaseURLs: []string{"https://r.openai.azure.com"}, APIKeys: []string{"k"}},
			wantErr: `api_version "latest": azure: api-version must be a date`},
		{dialect: `{"protocol":"azure"}`, pc: ProviderConfig{BaseURLs: []string{"http://r.openai.azure.com"}, APIKeys: []string{"k"}}, wantErr: "endpoint must use https"},
		{dialect: `{"protocol":"azure"}`, pc: ProviderConfig{BaseURLs: []string{"https://r.openai.azure.com"}}, wantErr: "needs its resource's api_key"},
		{dialect: `{"protocol":"azure"}`, pc: ProviderConfig{APIKeys: []string{"k"}}, wantErr: "needs its resource endpoint"},
		{dialect: `{"protocol":"azure","region":"eastus"}`, wantErr: `air.dialects.azure: json: unknown field "region"`},
		{dialect: `{"protocol":"openai","region":"us-east-1"}`, pc: ProviderConfig{BaseURLs: []string{"https://api.openai.com/v1"}}, wantErr: `air.dialects.openai: json: unknown field "region"`},
		{dialect: `{"protocol":"openai"}`, wantErr: `provider "p": no base_url`},
		{dialect: `{"protocol":"mistral"}`, wantErr: `provider p: protocol "mistral" is not supported (this build knows anthropic, azure, bedrock, cohere, dashscope, gemini, openai, vertex)`},
		{dialect: ``, pc: ProviderConfig{BaseURLs: []string{"https://api.openai.com/v1"}}, wantErr: `provider p: protocol is required (this build knows anthropic, azure`},
	} {
		pc := tc.pc
		pc.Name, pc.DialectRaw = "p", json.RawMessage(tc.dialect)
		a := &App{StorageRaw: badgerJSON(t.TempDir()), Providers: []*ProviderConfig{&pc}}
		err := a.Provision(ctx)
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("Test %d: %v", i, err)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("Test %d: error %v, want one containing %q", i, err, tc.wantErr)
		case tc.wantErr == "":
			p := a.routes.Provider("p")
			if !reflect.DeepEqual(p.BaseURLs, tc.wantURLs) {
				t.Errorf("Test %d: base URLs %q, want %q", i, p.BaseURLs, tc.wantURLs)
			}
			req, err := p.Endpoint.NewRequest(context.Background(), providers.Attempt{BaseURL: p.BaseURLs[0], APIKey: "k"}, "m", false, []byte(`{}`))
			switch {
			case err != nil:
				t.Errorf("Test %d: request: %v", i, err)
			case tc.wantScope != "" && !strings.Contains(req.Header.Get("Authorization"), tc.wantScope):
				t.Errorf("Test %d: signed %q, want a credential with %q", i, req.Header.Get("Authorization"), tc.wantScope)
			case tc.wantPath != "" && req.URL.RequestURI() != tc.wantPath:
				t.Errorf("Test %d: request to %s, want %s", i, req.URL.RequestURI(), tc.wantPath)
			}
		}
		if err := a.Cleanup(); err != nil {
			t.Errorf("Test %d: cleanup: %v", i, err)
		}
	}
}

// TestAzureHealthCheckPath: an azure provider's health check probes its
// resource's model list by default, on the path its api_version picks,
// with the key in api-key.
func TestAzureHealthCheckPath(t *testing.T) {
	ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
	defer cancel()
	for i, tc := range []struct {
		version, path, want string
	}{
		{"", "", "/openai/models?api-version=2024-10-21"},
		{"2025-04-01-preview", "", "/openai/models?api-version=2025-04-01-preview"},
		{"v1", "", "/openai/v1/models"},
		{"v1", "/custom", "/custom"},
	} {
		pc := &ProviderConfig{Name: "az", DialectRaw: json.RawMessage(`{"protocol":"azure","api_version":"` + tc.version + `"}`),
			BaseURLs: []string{"https://r.openai.azure.com"}, APIKeys: []string{"k"}, HealthCheck: &HealthCheckConfig{Path: tc.path}}
		a := &App{StorageRaw: badgerJSON(t.TempDir()), Providers: []*ProviderConfig{pc}}
		if err := a.Provision(ctx); err != nil {
			t.Fatal(err)
		}
		if got := a.routingOptions()["az"].HealthCheck.Path; got != tc.want {
			t.Errorf("Test %d: path %q, want %q", i, got, tc.want)
		}
		req, _ := http.NewRequest(http.MethodGet, "https://r.openai.azure.com"+tc.want, nil)
		if err := a.routes.Provider("az").Endpoint.Authorize(req, providers.Attempt{BaseURL: "https://r.openai.azure.com", APIKey: "k"}); err != nil ||
			req.Header.Get("Api-Key") != "k" || req.Header.Get("Authorization") != "" {
			t.Errorf("Test %d: authorized %v (%v)", i, req.Header, err)
		}
		if err := a.Cleanup(); err != nil {
			t.Errorf("Test %d: cleanup: %v", i, err)
		}
	}
}
