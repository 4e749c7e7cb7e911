package billing

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/caddy-air/caddy-air/store/badger"
)

// TestTeamBudgetNests checks that a team's limits bind its members'
// requests together (key ⊂ user ⊂ team): two users, each well under their
// own limit, are refused once the team's total is reached, with an error
// naming the team; the tightest level is the one that refuses; a user of
// no team is not held back; the records carry the team and the tags; and
// the team's spend is reloaded from the store after a restart.
func TestTeamBudgetNests(t *testing.T) {
	ctx := context.Background()
	te := newTestEngine(t)
	b := te.Budgets()
	for _, l := range []struct {
		scope Scope
		id    string
		lim   Limits
	}{
		{ScopeTeam, "search", Limits{Total: claudeCost * 3}},
		{ScopeUser, "alice", Limits{Total: claudeCost * 10}},
		{ScopeUser, "bob", Limits{Total: claudeCost * 10}},
		{ScopeKey, "key_b", Limits{Total: claudeCost * 1}},
	} {
		if err := b.SetLimits(ctx, l.scope, l.id, l.lim); err != nil {
			t.Fatal(err)
		}
	}
	alice := Subject{User: "alice", KeyID: "key_a", Team: "search", Tags: []string{"proj:x"}}
	bob := Subject{User: "bob", KeyID: "key_b", Team: "search"}
	bob2 := Subject{User: "bob", KeyID: "key_b2", Team: "search"}
	run := func(s Subject) string {
		t.Helper()
		res, aerr := te.Admit(ctx, s, "claude-x", claudeUsage)
		if aerr != nil {
			return aerr.Message
		}
		res.Settle(Record{User: s.User, KeyID: s.KeyID, Model: "claude-x", Usage: claudeUsage})
		return ""
	}
	for i, step := range []struct {
		s    Subject
		want string // "" admitted, else a part of the refusal
	}{
		{alice, ""},
		{bob, ""},
		{bob, "this API key"}, // key_b's 1× is the tightest
		{bob2, ""},            // the team's third
		{alice, "your team"},  // alice is far from her own limit
		{bob2, "your team"},
		{Subject{User: "carol", KeyID: "key_c"}, ""}, // no team
	} {
		got := run(step.s)
		if step.want == "" && got != "" || step.want != "" && !strings.Contains(got, step.want) {
			t.Errorf("Test %d: %s/%s: %q, want %q", i, step.s.User, step.s.KeyID, got, step.want)
		}
	}
	te.flush(t)
	var teams, tags []string
	err := te.Ledger().Records(ctx, time.Time{}, time.Time{}, func(r Record) error {
		teams = append(teams, r.Team)
		tags = append(tags, strings.Join(r.Tags, "|"))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"search", "search", "search", ""}; !reflect.DeepEqual(teams, want) {
		t.Errorf("records' teams %q, want %q", teams, want)
	}
	if want := []string{"proj:x", "", "", ""}; !reflect.DeepEqual(tags, want) {
		t.Errorf("records' tags %q, want %q", tags, want)
	}
	// A restart reads the team's spend back from the store.
	again, err := NewBudgets(ctx, badger.NewBudgets(te.s))
	if err != nil {
		t.Fatal(err)
	}
	again.Now = te.clock.Now
	st := again.Status(ScopeTeam, "search")
	if len(st.Spend) != 1 || st.Spend[0].Total != claudeCost*3 {
		t.Errorf("the team's spend after a restart: %+v, want %d", st.Spend, claudeCost*3)
	}
}
