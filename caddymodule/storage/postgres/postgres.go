// Package postgres is the air.storage.postgres module: the gateway's
// state in PostgreSQL, shared by several instances.
package postgres

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/caddy-air/caddy-air/caddymodule/airmod"
	"github.com/caddy-air/caddy-air/store"
	pgstore "github.com/caddy-air/caddy-air/store/postgres"
)

func init() {
	caddy.RegisterModule(Storage{})
}

// openTimeout bounds how long opening the database (connecting and
// migrating) may take.
const openTimeout = 2 * time.Minute

// Storage keeps the state in a PostgreSQL database.
type Storage struct {
	// DSN is the PostgreSQL connection string, as a URL
	// (postgres://user:password@host:5432/db) or in keyword form. It is
	// a secret: give it as a placeholder such as {env.AIR_PG_DSN}, expanded
	// at load time, so that the config (which the admin API serves) holds
	// only the placeholder. caddy-air never logs it.
	DSN string `json:"dsn,omitempty"`
	// IntentGather is the least time between the starts of two commits of
	// ledger intents under load: the intents of requests that arrive
	// meanwhile share the next commit, and those requests wait up to this
	// long more before their upstream call (an idle instance commits at
	// once). Zero commits as soon as the previous commit ended. From 0 to
	// 1s. Default: zero with ledger_durability journaled (the default),
	// 20ms with strict.
	IntentGather *caddy.Duration `json:"intent_gather,omitempty"`

	// dsn is DSN with its placeholders replaced.
	dsn string
	// key is the pool key: a hash of dsn, never dsn itself.
	key string
}

// CaddyModule returns the Caddy module information.
func (Storage) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  airmod.StorageNamespace + ".postgres",
		New: func() caddy.Module { return new(Storage) },
	}
}

// Provision checks the settings and expands the DSN's placeholders.
func (s *Storage) Provision(caddy.Context) error {
	if err := s.Validate(); err != nil {
		return err
	}
	if s.DSN == "" {
		return errors.New("storage postgres: a connection string is required")
	}
	dsn, err := airmod.Expand(caddy.NewReplacer(), s.DSN)
	if err != nil {
		// Expand's errors name the variable or quote the setting as
		// written, which is the placeholder, not the secret.
		return fmt.Errorf("storage postgres: %w", err)
	}
	s.dsn = dsn
	sum := sha256.Sum256([]byte(dsn))
	s.key = "postgres:" + hex.EncodeToString(sum[:])
	return nil
}

// Validate checks intent_gather's range (Provision checks it first, so
// that its error comes before the DSN's).
func (s *Storage) Validate() error {
	if s.IntentGather == nil {
		return nil
	}
	if g := time.Duration(*s.IntentGather); g < 0 || g > time.Second {
		return fmt.Errorf("intent_gather: bad duration %s (0 to 1s)", g)
	}
	return nil
}

// PoolKey implements airmod.Storage: a hash of the expanded DSN.
func (s *Storage) PoolKey() string { return s.key }

// Shared implements airmod.Storage: instances share the database.
func (s *Storage) Shared() bool { return true }

// Directory implements airmod.Storage: the database has no local directory.
func (s *Storage) Directory() string { return "" }

// Gather implements airmod.IntentGatherer: intent_gather if set, else
// none in journaled mode (an intent never waits for a gather before its
// upstream call) and pgstore.IntentGather in strict mode.
func (s *Storage) Gather(strict bool) time.Duration {
	switch {
	case s.IntentGather != nil:
		return time.Duration(*s.IntentGather)
	case strict:
		return pgstore.IntentGather
	}
	return 0
}

// Open implements airmod.Storage: it connects and migrates the schema.
func (s *Storage) Open(ctx context.Context, o airmod.OpenOptions) (store.Repos, error) {
	ctx, cancel := context.WithTimeout(ctx, openTimeout)
	defer cancel()
	opts := pgstore.Options{DSN: s.dsn, Retention: o.LedgerRetention, Logger: o.Logger.Named("postgres")}
	if s.IntentGather != nil {
		// In Options zero is the default and negative none.
		opts.IntentGather = time.Duration(*s.IntentGather)
		if opts.IntentGather == 0 {
			opts.IntentGather = -1
		}
	}
	db, err := pgstore.Open(ctx, opts)
	if err != nil {
		return store.Repos{}, err
	}
	return db.Repos(), nil
}

// UnmarshalCaddyfile reads the storage line of the air option. Syntax:
//
//	storage postgres <dsn> {
//		intent_gather <duration>
//	}
func (s *Storage) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	d.Next() // the backend's name
	if !d.AllArgs(&s.DSN) {
		return d.ArgErr()
	}
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		switch d.Val() {
		case "intent_gather":
			var v string
			if !d.AllArgs(&v) {
				return d.ArgErr()
			}
			g, err := caddy.ParseDuration(v)
			if err != nil {
				return d.Errf("intent_gather: bad duration %q", v)
			}
			s.IntentGather = (*caddy.Duration)(&g)
		default:
			return d.Errf("storage postgres: unknown field %q", d.Val())
		}
	}
	return nil
}

// Interface guards.
var (
	_ airmod.Storage        = (*Storage)(nil)
	_ airmod.IntentGatherer = (*Storage)(nil)
	_ caddy.Provisioner     = (*Storage)(nil)
	_ caddy.Validator       = (*Storage)(nil)
	_ caddyfile.Unmarshaler = (*Storage)(nil)
)
