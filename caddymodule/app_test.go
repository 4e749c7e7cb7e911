package caddymodule

import (
	"context"
	"testing"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/caddy-air/caddy-air/jsonlimit"
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

func TestParseMaxJSONDepth(t *testing.T) {
	for i, tc := range []struct {
		input string
		want  int
		err   bool
	}{
		{input: "air {\n}", want: 0},
		{input: "air {\n\tmax_json_depth 64\n}", want: 64},
		{input: "air {\n\tmax_json_depth 1\n}", want: 1},
		{input: "air {\n\tmax_json_depth 0\n}", err: true},
		{input: "air {\n\tmax_json_depth -3\n}", err: true},
		{input: "air {\n\tmax_json_depth deep\n}", err: true},
		{input: "air {\n\tmax_json_depth\n}", err: true},
		{input: "air {\n\tmax_json_depth 10 20\n}", err: true},
	} {
		var a App
		err := a.UnmarshalCaddyfile(caddyfile.NewTestDispenser(tc.input))
		switch {
		case tc.err && err == nil:
			t.Errorf("Test %d: parsed %q, want an error", i, tc.input)
		case !tc.err && err != nil:
			t.Errorf("Test %d: %v", i, err)
		case !tc.err && a.MaxJSONDepth != tc.want:
			t.Errorf("Test %d: max_json_depth %d, want %d", i, a.MaxJSONDepth, tc.want)
		}
	}
}

func TestMaxJSONDepthDefaultAndValidation(t *testing.T) {
	ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
	defer cancel()
	a := &App{Storage: &Storage{Dir: t.TempDir()}}
	if err := a.Provision(ctx); err != nil {
		t.Fatal(err)
	}
	if a.MaxJSONDepth != jsonlimit.DefaultMaxDepth {
		t.Errorf("default max_json_depth %d, want %d", a.MaxJSONDepth, jsonlimit.DefaultMaxDepth)
	}
	a.MaxJSONDepth = -1
	if err := a.Validate(); err == nil {
		t.Error("a negative max_json_depth passed validation")
	}
}
