package caddymodule

import (
	"context"
	"net/http/httptest"
	"reflect"
	"testing"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

func TestConsoleCaddyfile(t *testing.T) {
	for i, tc := range []struct {
		input   string
		want    Console
		wantErr bool
	}{
		{"air_console", Console{}, false},
		{"air_console {\n admins alice bob\n admins carol\n}", Console{Admins: []string{"alice", "bob", "carol"}}, false},
		{"air_console {\n user_header X-Forwarded-User\n prefix /ui\n csrf_secret {env.S}\n}",
			Console{UserHeader: "X-Forwarded-User", Prefix: "/ui", CSRFSecret: "{env.S}"}, false},
		{"air_console /x", Console{}, true},
		{"air_console {\n admins\n}", Console{}, true},
		{"air_console {\n prefix ui\n}", Console{}, true},
		{"air_console {\n user_header A B\n}", Console{}, true},
		{"air_console {\n password x\n}", Console{}, true},
	} {
		var c Console
		err := c.UnmarshalCaddyfile(caddyfile.NewTestDispenser(tc.input))
		if (err != nil) != tc.wantErr {
			t.Errorf("Test %d: err = %v, want error %t", i, err, tc.wantErr)
			continue
		}
		if err == nil && !reflect.DeepEqual(c, tc.want) {
			t.Errorf("Test %d: got %+v, want %+v", i, c, tc.want)
		}
	}
}

func TestConsoleIdentity(t *testing.T) {
	for i, tc := range []struct {
		header, authUser, sent string
		want                   string
	}{
		{"", "alice", "", "alice"},
		{"", "", "", ""},
		// Without user_header, a client-sent header is no identity.
		{"", "", "mallory", ""},
		{"X-Forwarded-User", "", "bob", "bob"},
		{"X-Forwarded-User", "alice", "", ""},
	} {
		c := Console{UserHeader: tc.header}
		r := httptest.NewRequest("GET", "/console/keys", nil)
		repl := caddy.NewReplacer()
		if tc.authUser != "" {
			repl.Set("http.auth.user.id", tc.authUser)
		}
		r = r.WithContext(context.WithValue(r.Context(), caddy.ReplacerCtxKey, repl))
		if tc.sent != "" {
			r.Header.Set("X-Forwarded-User", tc.sent)
		}
		if got := c.identity(r); got != tc.want {
			t.Errorf("Test %d: identity %q, want %q", i, got, tc.want)
		}
	}
}
