package caddymodule

import (
	"encoding/json"
	"testing"

	"github.com/caddyserver/caddy/v2"

	"github.com/caddy-air/caddy-air/caddymodule/airmod"
	badgerstorage "github.com/caddy-air/caddy-air/caddymodule/storage/badger"
	pgstorage "github.com/caddy-air/caddy-air/caddymodule/storage/postgres"
)

// badgerJSON is the storage object of a Badger database in dir.
func badgerJSON(dir string) json.RawMessage {
	b, _ := json.Marshal(map[string]string{"backend": "badger", "dir": dir})
	return b
}

// openBadger provisions the Badger backend of dir, as the app does.
func openBadger(t testing.TB, dir string) airmod.Storage {
	t.Helper()
	s := &badgerstorage.Storage{Dir: dir}
	if err := s.Provision(caddy.Context{}); err != nil {
		t.Fatal(err)
	}
	return s
}

// openPostgres provisions the PostgreSQL backend of dsn, as the app does.
func openPostgres(t testing.TB, dsn string) airmod.Storage {
	t.Helper()
	s := &pgstorage.Storage{DSN: dsn}
	if err := s.Provision(caddy.Context{}); err != nil {
		t.Fatal(err)
	}
	return s
}
