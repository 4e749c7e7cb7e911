// Package badger is the air.storage.badger module: the gateway's state in
// an embedded Badger database, for one instance. It is the default
// storage of the air app.
package badger

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/caddy-air/caddy-air/caddymodule/airmod"
	"github.com/caddy-air/caddy-air/store"
	badgerstore "github.com/caddy-air/caddy-air/store/badger"
)

func init() {
	caddy.RegisterModule(Storage{})
}

// Storage keeps the state in a Badger database on local disk.
type Storage struct {
	// Dir is the Badger database directory. Placeholders such as
	// {env.AIR_DATA_DIR} are expanded at load time. Default: the "air"
	// folder of Caddy's data directory.
	Dir string `json:"dir,omitempty"`

	// dir is Dir expanded, absolute and clean.
	dir string
}

// CaddyModule returns the Caddy module information.
func (Storage) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  airmod.StorageNamespace + ".badger",
		New: func() caddy.Module { return new(Storage) },
	}
}

// Provision expands the directory's placeholders and makes it absolute.
func (s *Storage) Provision(caddy.Context) error {
	dir := s.Dir
	if dir == "" {
		dir = filepath.Join(caddy.AppDataDir(), "air")
	}
	abs, err := filepath.Abs(caddy.NewReplacer().ReplaceAll(dir, ""))
	if err != nil {
		return fmt.Errorf("storage dir: %v", err)
	}
	s.dir = filepath.Clean(abs)
	return nil
}

// PoolKey implements airmod.Storage: the database's directory.
func (s *Storage) PoolKey() string { return "badger:" + s.dir }

// Shared implements airmod.Storage: one instance owns a Badger database.
func (s *Storage) Shared() bool { return false }

// Directory implements airmod.Storage.
func (s *Storage) Directory() string { return s.dir }

// Open implements airmod.Storage.
func (s *Storage) Open(_ context.Context, o airmod.OpenOptions) (store.Repos, error) {
	return badgerstore.OpenRepos(badgerstore.Config{Dir: s.dir, LedgerRetention: o.LedgerRetention, Logger: o.Logger})
}

// UnmarshalCaddyfile reads the storage line of the air option. Syntax:
//
//	storage badger <dir>
func (s *Storage) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	d.Next() // the backend's name
	if !d.AllArgs(&s.Dir) {
		return d.ArgErr()
	}
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		return d.Errf("storage badger: unknown field %q", d.Val())
	}
	return nil
}

// Interface guards.
var (
	_ airmod.Storage        = (*Storage)(nil)
	_ caddy.Provisioner     = (*Storage)(nil)
	_ caddyfile.Unmarshaler = (*Storage)(nil)
)
