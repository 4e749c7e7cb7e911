package caddymodule

import (
	"context"
	"encoding/json"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/tidwall/gjson"
	"go.uber.org/zap"

	"github.com/caddy-air/caddy-air/caddymodule/airmod"
	"github.com/caddy-air/caddy-air/store"
)

// defaultStorage is the storage of a config that sets none: Badger in the
// "air" folder of Caddy's data directory.
var defaultStorage = json.RawMessage(`{"backend":"badger"}`)

// provisionStorage loads the storage backend's module (namespace
// air.storage, named by the storage object's "backend"), which expands
// its placeholders and checks its settings, and sets the key under which
// configs share the open state: the Badger directory, or a hash of the
// PostgreSQL DSN (never the DSN itself).
func (a *App) provisionStorage() error {
	if len(a.StorageRaw) == 0 {
		a.StorageRaw = defaultStorage
	}
	name := gjson.GetBytes(a.StorageRaw, "backend").String()
	if err := airmod.CheckKnown("storage backend", airmod.StorageNamespace, name); err != nil {
		return err
	}
	mod, err := a.ctx.LoadModule(a, "StorageRaw")
	if err != nil {
		return err
	}
	a.storage = mod.(airmod.Storage)
	a.poolKey = a.storage.PoolKey()
	return nil
}

// openRepos opens the repositories of the backend s.
func openRepos(s airmod.Storage, ledgerRetention time.Duration, log *zap.Logger) (store.Repos, error) {
	return s.Open(context.Background(), airmod.OpenOptions{LedgerRetention: ledgerRetention, Logger: log})
}

// storageName is the backend's name, as the storage object's "backend"
// gives it.
func storageName(s airmod.Storage) string {
	if m, ok := s.(interface{ CaddyModule() caddy.ModuleInfo }); ok {
		return m.CaddyModule().ID.Name()
	}
	return ""
}
