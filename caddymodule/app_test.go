package caddymodule

import (
	"context"
	"testing"

	"github.com/caddyserver/caddy/v2"
)

// TestStoppedConfigServesUntilStateCloses reloads a config and checks that
// the old one still serves the requests its HTTP servers may take after
// its app stopped (Caddy stops a config's apps in no set order), and that
// no config serves once the last one has let go of the store.
func TestStoppedConfigServesUntilStateCloses(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
	defer cancel()
	start := func() *App {
		a := &App{Storage: &Storage{Dir: dir}}
		if err := a.Provision(ctx); err != nil {
			t.Fatal(err)
		}
		if err := a.Start(); err != nil {
			t.Fatal(err)
		}
		return a
	}
	old := start()
	next := start() // a reload starts the next config before stopping the old one
	if err := old.Stop(); err != nil {
		t.Fatal(err)
	}
	if old.current() == nil || old.runtimeState() == nil {
		t.Fatal("the old config refuses requests while the next one holds the store")
	}
	if err := old.Stop(); err != nil {
		t.Fatal(err)
	}
	if next.current() == nil {
		t.Fatal("stopping the old config twice released the next one's store")
	}
	if err := next.Stop(); err != nil {
		t.Fatal(err)
	}
	for name, a := range map[string]*App{"old": old, "next": next} {
		if a.current() != nil || a.runtimeState() != nil {
			t.Errorf("the %s config serves after the store closed", name)
		}
	}
}
