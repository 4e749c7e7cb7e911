package caddymodule

import (
	"context"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2"
)

// TestStoppedConfigServesUntilStateCloses reloads a config and checks that
// the old one still serves the requests its HTTP servers may take after
// its app stopped (Caddy stops a config's apps in no set order), and that
// no config serves once the last one has let go of the store.
func TestStoppedConfigServesUntilStateCloses(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
	defer cancel()
	start := func() *App {
		a := &App{Storage: &Storage{Dir: dir}}
		if err := a.Provision(ctx); err != nil {
			t.Fatal(err)
		}
		if err := a.Start(); err != nil {
			t.Fatal(err)
		}
		return a
	}
	old := start()
	next := start() // a reload starts the next config before stopping the old one
	if err := old.Stop(); err != nil {
		t.Fatal(err)
	}
	if old.current() == nil || old.runtimeState() == nil {
		t.Fatal("the old config refuses requests while the next one holds the store")
	}
	if err := old.Stop(); err != nil {
		t.Fatal(err)
	}
	if next.current() == nil {
		t.Fatal("stopping the old config twice released the next one's store")
	}
	if err := next.Stop(); err != nil {
		t.Fatal(err)
	}
	for name, a := range map[string]*App{"old": old, "next": next} {
		if a.current() != nil || a.runtimeState() != nil {
			t.Errorf("the %s config serves after the store closed", name)
		}
	}
}

// TestUnsetEnvFailsConfig checks that a provider key or URL that names an
// unset environment variable fails the config load, naming the variable,
// instead of calling the provider without credentials.
func TestUnsetEnvFailsConfig(t *testing.T) {
	ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
	defer cancel()
	t.Setenv("AIR_TEST_KEY", "sk-upstream")
	t.Setenv("AIR_TEST_EMPTY", "")
	for i, tc := range []struct {
		baseURL, apiKey string
		wantErr         string // "" when the config loads
	}{
		{"https://api.example.com/v1", "{env.AIR_TEST_KEY}", ""},
		{"https://api.example.com/v1", "literal-key", ""},
		{"https://api.example.com/v1", "{env.AIR_TEST_UNSET_KEY}", "provider p: api_key: environment variable AIR_TEST_UNSET_KEY is unset or empty"},
		{"https://api.example.com/v1", "{env.AIR_TEST_EMPTY}", "environment variable AIR_TEST_EMPTY is unset or empty"},
		{"{env.AIR_TEST_UNSET_URL}", "k", "provider p: base_url: environment variable AIR_TEST_UNSET_URL is unset or empty"},
		{"https://api.example.com/v1", "{env.AIR_TEST_KEY}{env.AIR_TEST_UNSET_SUFFIX}", "AIR_TEST_UNSET_SUFFIX"},
	} {
		a := &App{
			Storage:   &Storage{Dir: t.TempDir()},
			Providers: []*ProviderConfig{{Name: "p", Protocol: "openai", BaseURLs: []string{tc.baseURL}, APIKeys: []string{tc.apiKey}}},
		}
		err := a.Provision(ctx)
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("Test %d: %v", i, err)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("Test %d: error %v, want one containing %q", i, err, tc.wantErr)
		}
		if err := a.Cleanup(); err != nil {
			t.Errorf("Test %d: cleanup: %v", i, err)
		}
	}
}
