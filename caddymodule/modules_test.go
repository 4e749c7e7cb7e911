package caddymodule

import (
	"encoding/json"
	"testing"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

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

// loadCaddyfile parses in, an air option block, and if it parses,
// provisions and validates the config it adapts to, as `caddy validate`
// does: the Caddyfile only parses, so a value out of range passes the
// parser and fails here.
func loadCaddyfile(in string) error {
	if err := new(App).UnmarshalCaddyfile(caddyfile.NewTestDispenser(in)); err != nil {
		return err
	}
	return validateCaddyfile("{\n" + in + "\n}")
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
