package caddymodule

import (
	"context"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/caddy-air/caddy-air/providers"
)

// TestBedrockAzureCaddyfile: the bedrock and azure options of a provider
// block reach its JSON config as written (placeholders unexpanded); the
// parser checks only their syntax.
func TestBedrockAzureCaddyfile(t *testing.T) {
	for i, tc := range []struct {
		input   string
		want    ProviderConfig
		wantErr bool
	}{
		{input: "provider aws {\n protocol bedrock\n region us-west-2\n}",
			want: ProviderConfig{Name: "aws", Protocol: "bedrock", Region: "us-west-2"}},
		{input: "provider aws {\n protocol bedrock\n region {env.AWS_REGION}\n access_key_id {env.AK}\n secret_access_key {env.SK}\n session_token {env.ST}\n base_url https://vpce-1.bedrock-runtime.us-east-1.vpce.amazonaws.com\n}",
			want: ProviderConfig{Name: "aws", Protocol: "bedrock", Region: "{env.AWS_REGION}",
				BaseURLs: []string{"https://vpce-1.bedrock-runtime.us-east-1.vpce.amazonaws.com"},
				Bedrock:  &BedrockConfig{AccessKeyID: "{env.AK}", SecretAccessKey: "{env.SK}", SessionToken: "{env.ST}"}}},
		{input: "provider az {\n protocol azure\n endpoint https://r.openai.azure.com\n api_key {env.AZ}\n api_version 2025-04-01-preview\n}",
			want: ProviderConfig{Name: "az", Protocol: "azure", BaseURLs: []string{"https://r.openai.azure.com"}, APIKeys: []string{"{env.AZ}"},
				Azure: &AzureConfig{APIVersion: "2025-04-01-preview"}}},
		{input: "provider az {\n protocol azure\n base_url https://r.openai.azure.com/openai/v1\n api_key k\n api_version v1\n}",
			want: ProviderConfig{Name: "az", Protocol: "azure", BaseURLs: []string{"https://r.openai.azure.com/openai/v1"}, APIKeys: []string{"k"},
				Azure: &AzureConfig{APIVersion: "v1"}}},
		{input: "provider aws {\n protocol bedrock\n region\n}", wantErr: true},
		{input: "provider aws {\n protocol bedrock\n region us-east-1 eu-west-1\n}", wantErr: true},
		{input: "provider aws {\n protocol bedrock\n access_key_id\n}", wantErr: true},
		{input: "provider aws {\n protocol bedrock\n secret_access_key a b\n}", wantErr: true},
		{input: "provider az {\n protocol azure\n api_version\n}", wantErr: true},
	} {
		a := new(App)
		err := a.UnmarshalCaddyfile(caddyfile.NewTestDispenser("air {\n" + tc.input + "\n}"))
		if (err != nil) != tc.wantErr {
			t.Errorf("Test %d: err = %v, want error %t", i, err, tc.wantErr)
			continue
		}
		if err == nil && !reflect.DeepEqual(*a.Providers[0], tc.want) {
			t.Errorf("Test %d: parsed %+v, want %+v", i, *a.Providers[0], tc.want)
		}
	}
}

// TestBedrockAzureProvision: every semantic check of the bedrock and
// azure options happens when the config is provisioned, with an error
// naming the provider and the option.
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
	static := &BedrockConfig{AccessKeyID: "{env.AIR_TEST_AK}", SecretAccessKey: "{env.AIR_TEST_SK}"}
	for i, tc := range []struct {
		pc       ProviderConfig
		wantErr  string // "" when the config loads
		wantURLs []string
		wantV1   bool
		wantVer  string
		// wantRegion is the region a bedrock provider signs for.
		wantRegion string
	}{
		{pc: ProviderConfig{Protocol: "bedrock", Region: "us-east-1", Bedrock: static},
			wantURLs: []string{"https://bedrock-runtime.us-east-1.amazonaws.com"}, wantRegion: "us-east-1"},
		{pc: ProviderConfig{Protocol: "bedrock", Region: "{env.AIR_TEST_REGION}", Bedrock: static},
			wantURLs: []string{"https://bedrock-runtime.eu-west-3.amazonaws.com"}, wantRegion: "eu-west-3"},
		{pc: ProviderConfig{Protocol: "bedrock", Region: "us-gov-west-1", BaseURLs: []string{"http://127.0.0.1:9/fake"},
			Bedrock: &BedrockConfig{AccessKeyID: "a", SecretAccessKey: "b", SessionToken: "c"}},
			wantURLs: []string{"http://127.0.0.1:9/fake"}, wantRegion: "us-gov-west-1"},
		// The default chain: found in the environment at request time.
		{pc: ProviderConfig{Protocol: "bedrock", Region: "us-east-1"}, wantURLs: []string{"https://bedrock-runtime.us-east-1.amazonaws.com"}, wantRegion: "us-east-1"},
		{pc: ProviderConfig{Protocol: "bedrock", Region: "us-east-1", HealthCheck: &HealthCheckConfig{}}, wantErr: "a bedrock provider has no health_check"},
		{pc: ProviderConfig{Protocol: "bedrock", Region: "us-east-1", Project: "p"}, wantErr: "are vertex settings"},
		{pc: ProviderConfig{Protocol: "bedrock", Bedrock: static}, wantErr: "provider p: a bedrock provider needs its region"},
		{pc: ProviderConfig{Protocol: "bedrock", Region: "us-east-1 ", Bedrock: static}, wantErr: `region "us-east-1 " is not an AWS region`},
		{pc: ProviderConfig{Protocol: "bedrock", Region: "https://x", Bedrock: static}, wantErr: "is not an AWS region"},
		{pc: ProviderConfig{Protocol: "bedrock", Region: "{env.AIR_TEST_NO_REGION}", Bedrock: static}, wantErr: "region: environment variable AIR_TEST_NO_REGION is unset"},
		{pc: ProviderConfig{Protocol: "bedrock", Region: "us-east-1", Bedrock: &BedrockConfig{AccessKeyID: "a"}}, wantErr: "access_key_id and secret_access_key go together"},
		{pc: ProviderConfig{Protocol: "bedrock", Region: "us-east-1", Bedrock: &BedrockConfig{SessionToken: "t"}}, wantErr: "go together"},
		{pc: ProviderConfig{Protocol: "bedrock", Region: "us-east-1", Bedrock: &BedrockConfig{AccessKeyID: "{env.AIR_TEST_NO_AK}", SecretAccessKey: "s"}},
			wantErr: "access_key_id: environment variable AIR_TEST_NO_AK is unset"},
		{pc: ProviderConfig{Protocol: "bedrock", Region: "us-east-1", Bedrock: &BedrockConfig{AccessKeyID: "a", SecretAccessKey: "{env.AIR_TEST_NO_SK}"}},
			wantErr: "secret_access_key: environment variable AIR_TEST_NO_SK"},
		{pc: ProviderConfig{Protocol: "bedrock", Region: "us-east-1", APIKeys: []string{"k"}}, wantErr: "not api_key"},
		{pc: ProviderConfig{Protocol: "bedrock", Region: "us-east-1", Azure: &AzureConfig{APIVersion: "v1"}}, wantErr: "api_version is an azure setting, not a bedrock one"},

		{pc: ProviderConfig{Protocol: "azure", BaseURLs: []string{"https://r.openai.azure.com/openai/"}, APIKeys: []string{"k"}},
			wantURLs: []string{"https://r.openai.azure.com"}, wantVer: "2024-10-21"},
		{pc: ProviderConfig{Protocol: "azure", BaseURLs: []string{"https://r.openai.azure.com/openai/v1"}, APIKeys: []string{"k"}, Azure: &AzureConfig{APIVersion: "v1"}},
			wantURLs: []string{"https://r.openai.azure.com"}, wantV1: true},
		{pc: ProviderConfig{Protocol: "azure", BaseURLs: []string{"https://r.openai.azure.com"}, APIKeys: []string{"k"}, Azure: &AzureConfig{APIVersion: "2025-04-01-preview"}},
			wantURLs: []string{"https://r.openai.azure.com"}, wantVer: "2025-04-01-preview"},
		{pc: ProviderConfig{Protocol: "azure", BaseURLs: []string{"https://r.openai.azure.com"}, APIKeys: []string{"k"}, Azure: &AzureConfig{APIVersion: "latest"}},
			wantErr: `provider p: api_version "latest": azure: api-version must be a date`},
		{pc: ProviderConfig{Protocol: "azure", BaseURLs: []string{"http://r.openai.azure.com"}, APIKeys: []string{"k"}}, wantErr: "endpoint must use https"},
		{pc: ProviderConfig{Protocol: "azure", BaseURLs: []string{"https://r.openai.azure.com"}}, wantErr: "needs its resource's api_key"},
		{pc: ProviderConfig{Protocol: "azure", APIKeys: []string{"k"}}, wantErr: "needs its resource endpoint"},
		{pc: ProviderConfig{Protocol: "azure", BaseURLs: []string{"https://r.openai.azure.com"}, APIKeys: []string{"k"}, Region: "eastus"}, wantErr: "region is not a setting of azure providers"},
		{pc: ProviderConfig{Protocol: "openai", BaseURLs: []string{"https://api.openai.com/v1"}, Region: "us-east-1"}, wantErr: "project, region, credentials_file and token_url are vertex settings (region a bedrock one too)"},
		{pc: ProviderConfig{Protocol: "openai", BaseURLs: []string{"https://api.openai.com/v1"}, Bedrock: static}, wantErr: "are bedrock settings, not openai ones"},
		{pc: ProviderConfig{Protocol: "anthropic", BaseURLs: []string{"https://api.anthropic.com/v1"}, Azure: &AzureConfig{}}, wantErr: "api_version is an azure setting"},
		{pc: ProviderConfig{Protocol: "openai"}, wantErr: `provider "p": no base_url`},
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
			p := a.cfg.Routes.Provider("p")
			if !reflect.DeepEqual(p.BaseURLs, tc.wantURLs) {
				t.Errorf("Test %d: base URLs %q, want %q", i, p.BaseURLs, tc.wantURLs)
			}
			if e, ok := p.Endpoint.(bedrockEndpoint); pc.Protocol == "bedrock" && (!ok || e.signer.Region() != tc.wantRegion) {
				t.Errorf("Test %d: endpoint %+v", i, p.Endpoint)
			}
			if e, ok := p.Endpoint.(azureEndpoint); pc.Protocol == "azure" && (!ok || e.v1 != tc.wantV1 || e.apiVersion != tc.wantVer) {
				t.Errorf("Test %d: endpoint %+v", i, p.Endpoint)
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
		pc := &ProviderConfig{Name: "az", Protocol: "azure", BaseURLs: []string{"https://r.openai.azure.com"}, APIKeys: []string{"k"},
			HealthCheck: &HealthCheckConfig{Path: tc.path}}
		if tc.version != "" {
			pc.Azure = &AzureConfig{APIVersion: tc.version}
		}
		a := &App{Storage: &Storage{Dir: t.TempDir()}, Providers: []*ProviderConfig{pc}}
		if err := a.Provision(ctx); err != nil {
			t.Fatal(err)
		}
		if got := a.routingOptions()["az"].HealthCheck.Path; got != tc.want {
			t.Errorf("Test %d: path %q, want %q", i, got, tc.want)
		}
		req, _ := http.NewRequest(http.MethodGet, "https://r.openai.azure.com"+tc.want, nil)
		if err := a.cfg.Routes.Provider("az").Endpoint.Authorize(req, providers.Attempt{BaseURL: "https://r.openai.azure.com", APIKey: "k"}); err != nil ||
			req.Header.Get("Api-Key") != "k" || req.Header.Get("Authorization") != "" {
			t.Errorf("Test %d: authorized %v (%v)", i, req.Header, err)
		}
		if err := a.Cleanup(); err != nil {
			t.Errorf("Test %d: cleanup: %v", i, err)
		}
	}
}
