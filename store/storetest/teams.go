package storetest

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/caddy-air/caddy-air/store"
)

// RunTeams checks the teams repository: create, a taken name, members
// kept sorted with their admin flag, one team per user, removal, models,
// and that all of it survives a restart.
func RunTeams(t *testing.T, b Backend) {
	ctx := context.Background()
	h := b.open(t)
	tm := func() store.Teams { return h.r.Teams }
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	must(t, tm().Create(ctx, store.Team{Name: "search", Models: []string{"gpt-*"}, CreatedAt: t0}))
	must(t, tm().Create(ctx, store.Team{Name: "ads", CreatedAt: t0.Add(time.Second)}))
	if err := tm().Create(ctx, store.Team{Name: "search", CreatedAt: t0}); !errors.Is(err, store.ErrExists) {
		t.Errorf("creating a taken name: %v, want ErrExists", err)
	}
	must(t, tm().AddMember(ctx, "search", "carol", false))
	must(t, tm().AddMember(ctx, "search", "alice", true))
	must(t, tm().AddMember(ctx, "search", "bob", false))
	must(t, tm().AddMember(ctx, "search", "bob", true)) // changes the flag
	must(t, tm().AddMember(ctx, "ads", "dave", false))
	if err := tm().AddMember(ctx, "ads", "alice", false); !errors.Is(err, store.ErrExists) {
		t.Errorf("adding a member of another team: %v, want ErrExists", err)
	}
	if err := tm().AddMember(ctx, "nope", "erin", false); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("adding to an unknown team: %v, want ErrNotFound", err)
	}
	if err := tm().RemoveMember(ctx, "ads", "carol"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("removing a member of another team: %v, want ErrNotFound", err)
	}
	must(t, tm().RemoveMember(ctx, "search", "carol"))
	must(t, tm().AddMember(ctx, "ads", "carol", false)) // free to join another
	must(t, tm().SetModels(ctx, "ads", []string{"claude-*", "gpt-4o"}))
	if err := tm().SetModels(ctx, "nope", nil); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("models of an unknown team: %v, want ErrNotFound", err)
	}
	must(t, tm().SetLogRequests(ctx, "search", true))
	must(t, tm().SetLogRequests(ctx, "ads", true))
	must(t, tm().SetLogRequests(ctx, "ads", false))
	if err := tm().SetLogRequests(ctx, "nope", true); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("request logs of an unknown team: %v, want ErrNotFound", err)
	}
	want := []store.Team{
		{Name: "ads", Models: []string{"claude-*", "gpt-4o"}, CreatedAt: t0.Add(time.Second),
			Members: []store.Member{{User: "carol"}, {User: "dave"}}},
		{Name: "search", Models: []string{"gpt-*"}, CreatedAt: t0,
			Members: []store.Member{{User: "alice", Admin: true}, {User: "bob", Admin: true}}, LogRequests: true},
	}
	for _, phase := range []string{"written", "reopened"} {
		got, err := tm().List(ctx)
		must(t, err)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: List = %+v, want %+v", phase, got, want)
		}
		one, err := tm().Get(ctx, "search")
		if err != nil || !reflect.DeepEqual(one, want[1]) {
			t.Errorf("%s: Get = %+v, %v; want %+v", phase, one, err, want[1])
		}
		if _, err := tm().Get(ctx, "nope"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s: Get of an unknown team: %v", phase, err)
		}
		b.reopen(t, h)
	}
}

// runTeamSpend checks that a record's team and tags are kept, next to its
// units of the audio and rerank endpoints, and that its cost counts in its
// team's spend, as in its user's and key's.
func runTeamSpend(t *testing.T, b Backend) {
	ctx := context.Background()
	h := b.open(t)
	now := time.Now().UTC().Truncate(time.Microsecond)
	recs := []store.Record{
		{ID: "r1", Time: now, User: "alice", KeyID: "k1", Team: "search", Tags: "a,b:c", Model: "m", Priced: true, Currency: "USD", Cost: 70,
			Usage: store.Usage{Characters: 120, AudioMillis: 3400, SearchUnits: 2}},
		{ID: "r2", Time: now, User: "bob", KeyID: "k2", Team: "search", Model: "m", Priced: true, Currency: "USD", Cost: 30},
		{ID: "r3", Time: now, User: "carol", KeyID: "k3", Model: "m", Priced: true, Currency: "USD", Cost: 5},
	}
	must(t, h.r.Ledger.Append(ctx, recs))
	must(t, h.r.Ledger.Flush(ctx))
	for _, phase := range []string{"written", "reopened"} {
		spend := map[store.Subject]int64{}
		must(t, h.r.Budgets.Spend(ctx, func(s store.Spend) error {
			if s.Period == store.PeriodTotal {
				spend[s.Subject] += s.Amount
			}
			return nil
		}))
		team := store.Subject{Scope: store.ScopeTeam, ID: "search"}
		if spend[team] != 100 || spend[store.Subject{Scope: store.ScopeUser, ID: "alice"}] != 70 {
			t.Errorf("%s: spend %v, want 100 for the team and 70 for alice", phase, spend)
		}
		if n := len(spend); n != 7 {
			t.Errorf("%s: %d subjects with spend (%v), want 7 (no team for carol)", phase, n, spend)
		}
		var got []store.Record
		must(t, h.r.Ledger.Records(ctx, time.Time{}, time.Time{}, func(r store.Record) error { got = append(got, r); return nil }))
		if len(got) != 3 || got[0].Team != "search" || got[0].Tags != "a,b:c" || got[2].Team != "" || got[2].Tags != "" {
			t.Errorf("%s: records %+v, want their teams and tags kept", phase, got)
		} else if u := got[0].Usage; u.Characters != 120 || u.AudioMillis != 3400 || u.SearchUnits != 2 {
			t.Errorf("%s: units %+v, want 120 characters, 3400 audio ms and 2 search units next to the team", phase, u)
		}
		b.reopen(t, h)
	}
}

// runKeyTags checks that a key's default tags are kept next to its
// allow-list, across a regenerate and a restart, and that a key without
// tags reads back none.
func runKeyTags(t *testing.T, b Backend) {
	ctx := context.Background()
	h := b.open(t)
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	must(t, h.r.Keys.Create(ctx, store.Key{ID: "key_t1", Hash: "h-t1", User: "alice", CreatedAt: t0, Tags: []string{"search", "env:prod"},
		AllowIPs: []string{"10.0.0.0/8"}}))
	must(t, h.r.Keys.Create(ctx, store.Key{ID: "key_t2", Hash: "h-t2", User: "alice", CreatedAt: t0.Add(time.Second)}))
	if _, err := h.r.Keys.Regenerate(ctx, "key_t1", "h-t1b", t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	for _, phase := range []string{"written", "reopened"} {
		k, err := h.r.Keys.ByHash(ctx, "h-t1b")
		must(t, err)
		if !reflect.DeepEqual(k.Tags, []string{"search", "env:prod"}) || !reflect.DeepEqual(k.AllowIPs, []string{"10.0.0.0/8"}) {
			t.Errorf("%s: tags %q and allow-list %q, want [search env:prod] and [10.0.0.0/8]", phase, k.Tags, k.AllowIPs)
		}
		list, err := h.r.Keys.List(ctx, "alice")
		must(t, err)
		if len(list) != 2 || list[1].Tags != nil {
			t.Errorf("%s: listed %+v, want key_t2 without tags", phase, list)
		}
		b.reopen(t, h)
	}
}

// runIntentTeam checks that an intent keeps its record's team and tags
// across a restart, so that an interrupted request counts in its team.
func runIntentTeam(t *testing.T, b Backend) {
	ctx := context.Background()
	h := b.open(t)
	rec := store.Record{ID: "req_team", Time: time.Now().UTC().Truncate(time.Microsecond), User: "alice", KeyID: "k1",
		Team: "search", Tags: "a,b", Model: "m", Outcome: "interrupted"}
	must(t, h.r.Intents.Add(rec))
	b.reopen(t, h)
	var got []store.Record
	for range 100 { // a shared backend reports them once the dead instance's lease expired
		recs, err := h.r.Intents.Interrupted(ctx)
		must(t, err)
		if got = recs; len(got) > 0 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if len(got) != 1 || got[0].Team != "search" || got[0].Tags != "a,b" {
		t.Errorf("interrupted after a restart: %+v, want req_team with its team and tags", got)
	}
}
