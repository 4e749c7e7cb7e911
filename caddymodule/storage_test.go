package caddymodule

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/caddy-air/caddy-air/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func TestStorageCaddyfile(t *testing.T) {
	for i, tc := range []struct {
		input   string
		want    string // the storage object's JSON
		wantErr string
	}{
		{"air {\n storage badger /var/lib/air\n}", `{"backend":"badger","dir":"/var/lib/air"}`, ""},
		{"air {\n storage postgres {env.AIR_PG_DSN}\n}", `{"backend":"postgres","dsn":"{env.AIR_PG_DSN}"}`, ""},
		{"air {\n storage postgres \"host=db dbname=air\"\n}", `{"backend":"postgres","dsn":"host=db dbname=air"}`, ""},
		{"air {\n storage\n}", "", "wrong argument count"},
		{"air {\n storage postgres\n}", "", "wrong argument count"},
		{"air {\n storage postgres a b\n}", "", "wrong argument count"},
		{"air {\n storage mysql dsn\n}", "", `storage backend "mysql" is not supported (this build knows badger, postgres)`},
		{"air {\n storage postgres dsn {\n intent_gather 2ms\n }\n}", `{"backend":"postgres","dsn":"dsn","intent_gather":2000000}`, ""},
		{"air {\n storage postgres dsn {\n intent_gather 0\n }\n}", `{"backend":"postgres","dsn":"dsn","intent_gather":0}`, ""},
		{"air {\n storage postgres dsn {\n intent_gather soon\n }\n}", "", `intent_gather: bad duration "soon"`},
		{"air {\n storage badger /d {\n intent_gather 2ms\n }\n}", "", `storage badger: unknown field "intent_gather"`},
		{"air {\n storage postgres dsn {\n gather 2ms\n }\n}", "", `storage postgres: unknown field "gather"`},
	} {
		a := new(App)
		err := a.UnmarshalCaddyfile(caddyfile.NewTestDispenser(tc.input))
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
		if string(a.StorageRaw) != tc.want {
			t.Errorf("Test %d: storage %s, want %s", i, a.StorageRaw, tc.want)
		}
	}
}

// TestPostgresDSNPlaceholder checks that the DSN's placeholder is expanded
// at provisioning, that neither the config nor the pool key holds the
// secret, and that an unset variable fails the load naming the variable.
func TestPostgresDSNPlaceholder(t *testing.T) {
	ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
	defer cancel()
	const secret = "postgres://air:hunter2-secret@db.internal/air"
	t.Setenv("AIR_TEST_PG_SECRET", secret)
	raw := json.RawMessage(`{"backend":"postgres","dsn":"{env.AIR_TEST_PG_SECRET}"}`)
	a := &App{StorageRaw: raw}
	if err := a.Provision(ctx); err != nil {
		t.Fatal(err)
	}
	defer a.Cleanup()
	if err := a.Validate(); err != nil {
		t.Fatal(err)
	}
	other := openPostgres(t, secret)
	if a.poolKey != other.PoolKey() || !strings.HasPrefix(a.poolKey, "postgres:") {
		t.Errorf("pool key %q, want the expanded DSN's %q", a.poolKey, other.PoolKey())
	}
	out, _ := json.Marshal(a)
	if bytes.Contains(out, []byte("hunter2")) || bytes.Contains(raw, []byte("hunter2")) || strings.Contains(a.poolKey, "hunter2") {
		t.Errorf("the config or pool key holds the password: %s / %s", out, a.poolKey)
	}

	b := &App{StorageRaw: json.RawMessage(`{"backend":"postgres","dsn":"{env.AIR_TEST_PG_UNSET}"}`)}
	err := b.Provision(ctx)
	if err == nil || !strings.Contains(err.Error(), "AIR_TEST_PG_UNSET is unset or empty") {
		t.Errorf("an unset DSN variable: %v", err)
	}
	_ = b.Cleanup()
}

// TestMigrateCommand runs `caddy air migrate` against a fresh database,
// from a Caddyfile whose storage line names the DSN through a placeholder,
// then again with --dsn: the first run applies the migrations, the second
// none.
func TestMigrateCommand(t *testing.T) {
	dsn := pgtest.DSN(t)
	t.Setenv("AIR_TEST_MIGRATE_DSN", dsn)
	cfg := filepath.Join(t.TempDir(), "Caddyfile")
	if err := os.WriteFile(cfg, []byte("{\n\tair {\n\t\tstorage postgres {env.AIR_TEST_MIGRATE_DSN}\n\t}\n}\n:0 {\n\trespond ok\n}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (string, error) {
		cmd := migrateCommand()
		cmd.Flags().StringP("config", "c", "", "")
		cmd.Flags().StringP("adapter", "a", "", "")
		var out bytes.Buffer
		cmd.SetOut(&out)
		cmd.SetErr(&out)
		cmd.SetArgs(args)
		cmd.SetContext(context.Background())
		err := cmd.Execute()
		return out.String(), err
	}
	out, err := run("--config", cfg, "--adapter", "caddyfile")
	if err != nil {
		t.Fatalf("migrate: %v\n%s", err, out)
	}
	missing := false
	for _, name := range []string{"00001_schema.sql", "00002_cache_1h_service_tier.sql", "00003_pending_responses.sql",
		"00004_key_scopes_usage_by_user.sql", "00005_ledger_deployment.sql", "00006_saturating_sums.sql",
		"00007_limits_max_parallel.sql", "00008_priced_tool_calls.sql", "00009_ledger_duration.sql",
		"00010_ledger_team_tags.sql", "00011_teams.sql", "00012_key_tags.sql",
		"00013_ledger_units.sql", "00015_alerts_outbox.sql", "00016_key_regenerate_allow_ips.sql", "00017_files_batches.sql", "00019_audit.sql",
		"00020_request_logs.sql"} {
		missing = missing || !strings.Contains(out, "applied "+name)
	}
	if missing || !strings.Contains(out, "schema version 20 ") {
		t.Errorf("first run printed:\n%s", out)
	}
	out, err = run("--dsn", "{env.AIR_TEST_MIGRATE_DSN}")
	if err != nil {
		t.Fatalf("migrate --dsn: %v\n%s", err, out)
	}
	if strings.Contains(out, "applied") || !strings.Contains(out, "schema version 20 ") {
		t.Errorf("second run printed:\n%s", out)
	}
	if _, err := run("--dsn", "postgres://air:hunter2-secret@127.0.0.1:1/air?connect_timeout=2"); err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("a failed connection: %v (must fail without the password)", err)
	}
	if _, err := run(); err == nil {
		t.Error("migrate without a database succeeded")
	}
}
