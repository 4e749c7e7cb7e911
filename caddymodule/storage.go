package caddymodule

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/caddyserver/caddy/v2"
)

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
