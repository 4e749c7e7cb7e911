package caddymodule

import (
	"encoding/json"
	"testing"

	"github.com/caddyserver/caddy/v2"

	"github.com/caddy-air/caddy-air/caddymodule/airmod"
	_ "github.com/caddy-air/caddy-air/caddymodule/dialects/azure"
	_ "github.com/caddy-air/caddy-air/caddymodule/dialects/bedrock"
	_ "github.com/caddy-air/caddy-air/caddymodule/dialects/gemini"
	_ "github.com/caddy-air/caddy-air/caddymodule/dialects/keyed"
	_ "github.com/caddy-air/caddy-air/caddymodule/dialects/vertex"
	badgerstorage "github.com/caddy-air/caddy-air/caddymodule/storage/badger"
	pgstorage "github.com/caddy-air/caddy-air/caddymodule/storage/postgres"
)

// badgerJSON is the storage object of a Badger database in dir.
func badgerJSON(dir string) json.RawMessage {
	b, _ := json.Marshal(map[string]string{"backend": "badger", "dir": dir})
	return b
}

// dialectJSON is the dialect object of a provider of protocol with no
// settings of its own.
func dialectJSON(protocol string) json.RawMessage {
	return json.RawMessage(`{"protocol":"` + protocol + `"}`)
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
