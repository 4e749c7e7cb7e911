package caddymodule

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/caddyserver/caddy/v2"
)

// Storage selects the state backend.
type Storage struct {
	// Backend is the store implementation: "badger" (embedded, one
	// instance; the default) or "postgres" (shared by several instances).
	Backend string `json:"backend,omitempty"`
	// Dir is the Badger database directory. Placeholders such as
	// {env.AIR_DATA_DIR} are expanded at load time.
	Dir string `json:"dir,omitempty"`
	// DSN is the PostgreSQL connection string of the postgres backend, as a
	// URL (postgres://user:password@host:5432/db) or in keyword form. It is
	// a secret: give it as a placeholder such as {env.AIR_PG_DSN}, expanded
	// at load time, so that the config (which the admin API serves) holds
	// only the placeholder. caddy-air never logs it.
	DSN string `json:"dsn,omitempty"`
	// IntentGather is, on postgres, the least time between the starts of
	// two commits of ledger intents under load: the intents of requests
	// that arrive meanwhile share the next commit, and those requests
	// wait up to this long more before their upstream call (an idle
	// instance commits at once). Zero commits as soon as the previous
	// commit ended. Default: zero with ledger_durability journaled (the
	// default), 20ms with strict.
	IntentGather *caddy.Duration `json:"intent_gather,omitempty"`

	// dsn is DSN with its placeholders replaced.
	dsn string
}

// Storage backends.
const (
	backendBadger   = "badger"
	backendPostgres = "postgres"
)

// provisionStorage fills in the storage defaults, expands placeholders and
// sets the key under which configs share the open state: the Badger
// directory, or a hash of the PostgreSQL DSN (never the DSN itself).
func (a *App) provisionStorage() error {
	if a.Storage == nil {
		a.Storage = &Storage{}
	}
	st := a.Storage
	if st.Backend == "" {
		st.Backend = backendBadger
	}
	switch st.Backend {
	case backendBadger:
		if st.Dir == "" {
			st.Dir = filepath.Join(caddy.AppDataDir(), "air")
		}
		dir, err := filepath.Abs(caddy.NewReplacer().ReplaceAll(st.Dir, ""))
		if err != nil {
			return fmt.Errorf("storage dir: %v", err)
		}
		st.Dir = dir
		a.poolKey = backendBadger + ":" + filepath.Clean(dir)
	case backendPostgres:
		if st.DSN == "" {
			return errors.New("storage postgres: a connection string is required")
		}
		dsn, err := expand(caddy.NewReplacer(), st.DSN)
		if err != nil {
			// expand's errors name the variable or quote the setting as
			// written, which is the placeholder, not the secret.
			return fmt.Errorf("storage postgres: %w", err)
		}
		st.dsn = dsn
		sum := sha256.Sum256([]byte(dsn))
		a.poolKey = backendPostgres + ":" + hex.EncodeToString(sum[:])
	}
	return nil
}

// validateStorage checks the storage settings.
func (a *App) validateStorage() error {
	switch a.Storage.Backend {
	case backendBadger:
		if a.Storage.DSN != "" {
			return errors.New("storage badger takes a directory, not a dsn")
		}
	case backendPostgres:
		if a.Storage.Dir != "" {
			return errors.New("storage postgres takes a dsn, not a directory")
		}
	default:
		return fmt.Errorf("storage backend %q is not supported (badger or postgres)", a.Storage.Backend)
	}
	return nil
}
