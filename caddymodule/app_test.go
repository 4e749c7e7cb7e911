package caddymodule

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/caddy-air/caddy-air/billing"
	"github.com/caddy-air/caddy-air/gateway"
	"github.com/caddy-air/caddy-air/jsonlimit"
	"github.com/caddy-air/caddy-air/reqbody"
)

// appStarter returns a function that provisions and starts an app on the
// Badger store in dir, as each config load does.
func appStarter(t *testing.T, dir string) func() *App {
	t.Helper()
	ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
	t.Cleanup(cancel)
	return func() *App {
		t.Helper()
		a := &App{StorageRaw: badgerJSON(dir)}
		if err := a.Provision(ctx); err != nil {
			t.Fatal(err)
		}
		if err := a.Start(); err != nil {
			t.Fatal(err)
		}
		return a
	}
}

// TestStoppedConfigServesUntilStateCloses reloads a config and checks that
// the old one still serves the requests its HTTP servers may take after
// its app stopped (Caddy stops a config's apps in no set order), and that
// no config serves once the last one has let go of the store.
func TestStoppedConfigServesUntilStateCloses(t *testing.T) {
	start := appStarter(t, t.TempDir())
	old := start()
	next := start() // a reload starts the next config before stopping the old one
	if err := old.Stop(); err != nil {
		t.Fatal(err)
	}
	if old.live.Shared() == nil || old.live.Services() == nil {
		t.Fatal("the old config refuses requests while the next one holds the store")
	}
	if err := old.Stop(); err != nil {
		t.Fatal(err)
	}
	if next.live.Shared() == nil {
		t.Fatal("stopping the old config twice released the next one's store")
	}
	if err := next.Stop(); err != nil {
		t.Fatal(err)
	}
	for name, a := range map[string]*App{"old": old, "next": next} {
		if a.live.Shared() != nil || a.live.Services() != nil {
			t.Errorf("the %s config serves after the store closed", name)
		}
	}
}

// TestStoppedStateDrainsInFlight stops the last config while an exchange
// is in flight through its state: the state must stay open, and its
// ledger take the exchange's record, until the exchange ends (Caddy may
// stop the air app before the HTTP servers have finished their requests
// within grace_period); a config that starts meanwhile on the same
// storage shares the draining state instead of opening the storage again.
func TestStoppedStateDrainsInFlight(t *testing.T) {
	start := appStarter(t, t.TempDir())
	write := func(st *gateway.Shared, id string) {
		t.Helper()
		if _, err := st.Ledger.Write(context.Background(), billing.Record{ID: id, User: "u", Model: "m", Outcome: billing.OutcomeOK}); err != nil {
			t.Fatalf("recording %s: %v", id, err)
		}
	}

	a := start()
	st := a.live.Shared()
	if !st.Enter() {
		t.Fatal("a running state refused an exchange")
	}
	if err := a.Stop(); err != nil {
		t.Fatal(err)
	}
	if a.live.Shared() != st {
		t.Fatal("the state closed while an exchange was in flight")
	}
	write(st, "during-stop")
	st.Leave()
	if a.live.Shared() != nil || !st.Closed() {
		t.Fatal("the state stayed open after the last exchange ended")
	}
	if st.Enter() {
		t.Error("a closed state let an exchange in")
	}

	// A config that starts while the last one's exchanges drain takes the
	// same state back; the old exchange's end does not close it.
	b := start()
	st = b.live.Shared()
	if got, err := st.Ledger.Get(context.Background(), "during-stop"); err != nil || got.ID != "during-stop" {
		t.Fatalf("the record written while draining: %+v, %v", got, err)
	}
	if !st.Enter() {
		t.Fatal("a running state refused an exchange")
	}
	if err := b.Stop(); err != nil {
		t.Fatal(err)
	}
	c := start()
	if c.live.Shared() != st {
		t.Fatal("a config started while the state drained opened another one")
	}
	st.Leave()
	if c.live.Shared() != st {
		t.Fatal("the end of the old config's exchange closed the next config's state")
	}
	write(st, "after-resume")
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	if c.live.Shared() != nil {
		t.Fatal("the state stayed open after its last config stopped with nothing in flight")
	}
}

func TestParseMaxJSONDepth(t *testing.T) {
	for i, tc := range []struct {
		input string
		want  int
		err   bool
	}{
		{input: "air {\n}", want: 0},
		{input: "air {\n\tmax_json_depth 64\n}", want: 64},
		{input: "air {\n\tmax_json_depth 1\n}", want: 1},
		{input: "air {\n\tmax_json_depth 0\n}", err: true},
		{input: "air {\n\tmax_json_depth -3\n}", err: true},
		{input: "air {\n\tmax_json_depth deep\n}", err: true},
		{input: "air {\n\tmax_json_depth\n}", err: true},
		{input: "air {\n\tmax_json_depth 10 20\n}", err: true},
	} {
		var a App
		err := a.UnmarshalCaddyfile(caddyfile.NewTestDispenser(tc.input))
		switch {
		case tc.err && err == nil:
			t.Errorf("Test %d: parsed %q, want an error", i, tc.input)
		case !tc.err && err != nil:
			t.Errorf("Test %d: %v", i, err)
		case !tc.err && a.MaxJSONDepth != tc.want:
			t.Errorf("Test %d: max_json_depth %d, want %d", i, a.MaxJSONDepth, tc.want)
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
			StorageRaw: badgerJSON(t.TempDir()),
			Providers:  []*ProviderConfig{{Name: "p", DialectRaw: dialectJSON("openai"), BaseURLs: []string{tc.baseURL}, APIKeys: []string{tc.apiKey}}},
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

func TestMaxJSONDepthDefaultAndValidation(t *testing.T) {
	ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
	defer cancel()
	a := &App{StorageRaw: badgerJSON(t.TempDir())}
	if err := a.Provision(ctx); err != nil {
		t.Fatal(err)
	}
	if a.MaxJSONDepth != jsonlimit.DefaultMaxDepth {
		t.Errorf("default max_json_depth %d, want %d", a.MaxJSONDepth, jsonlimit.DefaultMaxDepth)
	}
	a.MaxJSONDepth = -1
	if err := a.Validate(); err == nil {
		t.Error("a negative max_json_depth passed validation")
	}
}

func TestMaxBufferedBodies(t *testing.T) {
	for i, tc := range []struct {
		input    string
		want     int64
		parseErr bool
		invalid  bool
	}{
		{"air {\n}", reqbody.DefaultMaxBuffered, false, false},
		{"air {\nmax_buffered_bodies 1GiB\n}", 1 << 30, false, false},
		{"air {\nmax_buffered_bodies 64MiB\nmax_request_body 32MiB\n}", 64 << 20, false, false},
		{"air {\nmax_buffered_bodies 8MiB\n}", 8 << 20, false, true}, // below the 16 MiB body limit
		{"air {\nmax_buffered_bodies lots\n}", 0, true, false},
		{"air {\nmax_buffered_bodies 0\n}", 0, true, false},
		{"air {\nmax_buffered_bodies\n}", 0, true, false},
	} {
		a := new(App)
		err := a.UnmarshalCaddyfile(caddyfile.NewTestDispenser(tc.input))
		if (err != nil) != tc.parseErr {
			t.Errorf("Test %d: parse error %v, want one: %v", i, err, tc.parseErr)
			continue
		}
		if err != nil {
			continue
		}
		if a.MaxBufferedBodies == 0 {
			a.MaxBufferedBodies = reqbody.DefaultMaxBuffered
		}
		if a.MaxRequestBody == 0 {
			a.MaxRequestBody = defaultMaxRequestBody
		}
		if err := a.Validate(); (err != nil) != tc.invalid || a.MaxBufferedBodies != tc.want {
			t.Errorf("Test %d: %d bytes, validation error %v; want %d bytes, invalid: %v", i, a.MaxBufferedBodies, err, tc.want, tc.invalid)
		}
	}
}

// TestStorageBackends checks that the storage object picks a backend
// module by its "backend": badger and postgres load, each refusing the
// other's settings, and an unknown or missing name is refused with the
// names of the backends this build registers, from JSON as from the
// Caddyfile.
func TestStorageBackends(t *testing.T) {
	ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
	defer cancel()
	dir := t.TempDir()
	for i, tc := range []struct {
		storage string
		wantKey string
		wantErr string
	}{
		{``, "badger:" + filepath.Join(caddy.AppDataDir(), "air"), ""},
		{`{"backend":"badger","dir":"` + dir + `"}`, "badger:" + dir, ""},
		{`{"backend":"postgres","dsn":"postgres://air@db/air"}`, "postgres:", ""},
		{`{"backend":"etcd"}`, "", `storage backend "etcd" is not supported (this build knows badger, postgres)`},
		{`{"dir":"/var/lib/air"}`, "", `storage backend is required (this build knows badger, postgres)`},
		{`{"backend":"badger","dsn":"host=db"}`, "", `unknown field "dsn"`},
		{`{"backend":"postgres","dsn":"host=db","dir":"/x"}`, "", `unknown field "dir"`},
		{`{"backend":"postgres"}`, "", "storage postgres: a connection string is required"},
	} {
		a := &App{StorageRaw: json.RawMessage(tc.storage)}
		err := a.Provision(ctx)
		_ = a.Cleanup()
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
		if !strings.HasPrefix(a.poolKey, tc.wantKey) || a.storage == nil {
			t.Errorf("Test %d: pool key %q, want %q", i, a.poolKey, tc.wantKey)
		}
	}
	err := new(App).UnmarshalCaddyfile(caddyfile.NewTestDispenser("air {\n storage etcd http://db\n}"))
	if want := `storage backend "etcd" is not supported (this build knows badger, postgres)`; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Caddyfile storage etcd: %v, want %q", err, want)
	}
}
