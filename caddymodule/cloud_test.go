package caddymodule

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/caddy-air/caddy-air/internal/googletest"
	"github.com/caddy-air/caddy-air/providers"
)

// serviceAccount writes a service account key file of project sa-project
// and returns its path.
func serviceAccount(t *testing.T) string {
	return googletest.KeyFile(t, googletest.NewKey(t), googletest.Account{Email: "sa@sa-project.iam.gserviceaccount.com",
		Project: "sa-project", TokenURI: "https://oauth2.googleapis.com/token"})
}

// TestCloudProvidersConfig: the Caddyfile takes gemini and vertex
// providers' options, refusing those of other protocols; Provision
// checks them and fills the defaults.
func TestCloudProvidersConfig(t *testing.T) {
	ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
	defer cancel()
	sa := serviceAccount(t)
	t.Setenv("AIR_TEST_GEMINI_KEY", "AIza-from-env")
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", filepath.Join(t.TempDir(), "none.json")) // no ADC
	for i, tc := range []struct {
		provider, models string
		wantErr          string // "" when the config loads
		wantBase         string
	}{
		{"protocol gemini\n api_key {env.AIR_TEST_GEMINI_KEY}", "model g p gemini-2.5-flash", "", "https://generativelanguage.googleapis.com"},
		{"protocol gemini\n base_url http://127.0.0.1:1\n api_key k", "model g p {\n kind messages\n }", "", "http://127.0.0.1:1"},
		{"protocol gemini", "model g p", "a gemini provider needs an api_key", ""},
		{"protocol gemini\n api_key {env.AIR_TEST_UNSET}", "model g p", "AIR_TEST_UNSET is unset", ""},
		{"protocol gemini\n api_key k\n region us-central1", "model g p", "region is not a setting of gemini providers", ""},
		{"protocol gemini\n api_key k", "model g p {\n kind image\n }", "serves chat and messages models, not image", ""},
		{"protocol vertex\n region europe-west4\n credentials_file " + sa, "model v p gemini-2.5-pro", "", "https://europe-west4-aiplatform.googleapis.com"},
		{"protocol vertex\n region global\n project other\n credentials_file " + sa, "model v p", "", "https://aiplatform.googleapis.com"},
		{"protocol vertex\n credentials_file " + sa, "model v p", "a vertex provider needs a region", ""},
		{"protocol vertex\n region r\n api_key k\n credentials_file " + sa, "model v p", "takes no api_key", ""},
		{"protocol vertex\n region r\n credentials_file /no/such/file.json", "model v p", "credentials_file", ""},
		{"protocol vertex\n region r", "model v p", "no credentials_file, and vertex: finding application default credentials", ""},
		{"protocol vertex\n region r\n token_url http://127.0.0.1:1/token", "model v p", "token_url overrides the token endpoint of a credentials_file", ""},
		{"protocol openai\n base_url http://x/v1\n project p", "model o p", "project is not a setting of openai providers", ""},
		{"protocol openai", "model o p", `provider "p": no base_url`, ""},
	} {
		a := new(App)
		input := "air {\n storage badger " + t.TempDir() + "\n provider p {\n " + tc.provider + "\n }\n " + tc.models + "\n}"
		err := a.UnmarshalCaddyfile(caddyfile.NewTestDispenser(input))
		if err == nil {
			err = a.Provision(ctx)
		}
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("Test %d: %v", i, err)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("Test %d: error %v, want one containing %q", i, err, tc.wantErr)
		case err == nil:
			p := a.cfg.Routes.Provider("p")
			if p.Endpoint == nil || p.BaseURLs[0] != tc.wantBase {
				t.Errorf("Test %d: provider %+v", i, p)
			}
			if r, _ := a.cfg.Routes.Lookup(a.Models[0].Pattern); r.Kind != providers.KindChat && r.Kind != providers.KindMessages {
				t.Errorf("Test %d: kind %q", i, r.Kind)
			}
		}
		if err := a.Cleanup(); err != nil {
			t.Errorf("Test %d: cleanup: %v", i, err)
		}
	}
}
