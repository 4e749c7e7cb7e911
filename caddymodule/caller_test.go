package caddymodule

import (
	"context"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/caddy-air/caddy-air/gateway"
	"github.com/caddy-air/caddy-air/keys"
	"github.com/caddy-air/caddy-air/store/badger"
	"github.com/caddy-air/caddy-air/teams"
)

// callerState is a state with a teams service on Badger, whose team
// "search" has alice.
func callerState(t testing.TB) *gateway.Shared {
	t.Helper()
	db, err := badger.Open(badger.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	ctx := context.Background()
	ts, err := teams.NewService(ctx, badger.NewTeams(db), 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ts.Create(ctx, "search", []string{"gpt-*"}, time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := ts.Add(ctx, "search", "alice", false); err != nil {
		t.Fatal(err)
	}
	return &gateway.Shared{Teams: ts}
}

// callerRequest is a request with Caddy's variables and the given
// x-air-tags headers.
func callerRequest(tags ...string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", nil)
	r = r.WithContext(context.WithValue(r.Context(), caddyhttp.VarsCtxKey, map[string]any{}))
	for _, t := range tags {
		r.Header.Add("x-air-tags", t)
	}
	return r
}

// TestSubjectOf checks who a request is billed to: the team of its user,
// the header's tags over the key's default tags, and the team's models
// on top of the key's.
func TestSubjectOf(t *testing.T) {
	st := callerState(t)
	alice := &keys.Key{ID: "key_a", User: "alice", Tags: []string{"default"}}
	bob := &keys.Key{ID: "key_b", User: "bob"}
	for i, tc := range []struct {
		key      *keys.Key
		header   []string
		team     string
		tags     []string
		badParam bool
	}{
		{key: alice, team: "search", tags: []string{"default"}},
		{key: alice, header: []string{"a, b"}, team: "search", tags: []string{"a", "b"}},
		{key: alice, header: []string{" "}, team: "search", tags: []string{"default"}},
		{key: bob, header: []string{"x"}, tags: []string{"x"}},
		{key: bob, header: []string{"x", "y"}, badParam: true},
		{key: bob, header: []string{"x;y"}, badParam: true},
	} {
		r := callerRequest(tc.header...)
		if aerr := readCaller(r, st, tc.key); (aerr != nil) != tc.badParam {
			t.Errorf("Test %d: readCaller: %v", i, aerr)
			continue
		} else if aerr != nil {
			if aerr.Status != http.StatusBadRequest || aerr.Param == nil || *aerr.Param != "x-air-tags" {
				t.Errorf("Test %d: %+v, want a 400 on x-air-tags", i, aerr)
			}
			continue
		}
		s := subjectOf(r, tc.key)
		if s.Team != tc.team || !reflect.DeepEqual(s.Tags, tc.tags) || s.User != tc.key.User || s.KeyID != tc.key.ID {
			t.Errorf("Test %d: subject %+v, want team %q, tags %q", i, s, tc.team, tc.tags)
		}
	}
	r := callerRequest()
	_ = readCaller(r, st, alice)
	if allowModel(r, alice, "gpt-4o") != nil || allowModel(r, alice, "claude-x") == nil {
		t.Error("the team's models did not bound alice's")
	}
}

// BenchmarkReadCaller measures what teams and tags add to air_auth: the
// team lookup and the x-air-tags header's parse, with three tags, then
// the subject built from them.
func BenchmarkReadCaller(b *testing.B) {
	st := callerState(b)
	key := &keys.Key{ID: "key_a", User: "alice"}
	for _, tc := range []struct {
		name string
		tags []string
	}{{"no-header", nil}, {"three-tags", []string{"proj:search, env:prod, batch"}}} {
		b.Run(tc.name, func(b *testing.B) {
			r := callerRequest(tc.tags...)
			vars := r.Context().Value(caddyhttp.VarsCtxKey).(map[string]any)
			b.ReportAllocs()
			for b.Loop() {
				clear(vars)
				if aerr := readCaller(r, st, key); aerr != nil {
					b.Fatal(aerr)
				}
				if s := subjectOf(r, key); s.Team != "search" {
					b.Fatal(s)
				}
			}
		})
	}
}
