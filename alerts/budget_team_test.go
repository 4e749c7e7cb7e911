package alerts

import (
	"context"
	"testing"
	"time"

	"github.com/caddy-air/caddy-air/store"
	"github.com/caddy-air/caddy-air/store/badger"
)

// A team's spend, which Badger keeps under its own scope, is read against
// the team's limits and crosses its thresholds as a key's or a user's do.
func TestBudgetUsesReadTeamSpendOnBadger(t *testing.T) {
	ctx := context.Background()
	db, err := badger.Open(badger.Options{Dir: t.TempDir(), GCInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	led, err := badger.OpenLedger(db, t.TempDir(), 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer led.Close()
	bud := badger.NewBudgets(db)
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	team := store.Subject{Scope: store.ScopeTeam, ID: "ml"}
	if err := bud.SetLimits(ctx, team, store.Limits{Currency: "USD", Monthly: 1000, Total: 4000}); err != nil {
		t.Fatal(err)
	}
	// Two members of the team spend 850 nanos in all.
	for i, rec := range []store.Record{
		{ID: "r1", Time: now, User: "alice", KeyID: "key_a", Model: "m", Priced: true, Currency: "USD", Cost: 500, Team: "ml"},
		{ID: "r2", Time: now, User: "bob", KeyID: "key_b", Model: "m", Priced: true, Currency: "USD", Cost: 350, Team: "ml"},
		{ID: "r3", Time: now, User: "carol", KeyID: "key_c", Model: "m", Priced: true, Currency: "USD", Cost: 999},
	} {
		if fresh, err := led.Insert(ctx, rec); err != nil || !fresh {
			t.Fatalf("record %d: fresh %v, %v", i, fresh, err)
		}
	}
	uses, err := BudgetUses(ctx, bud, now, "USD")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for _, u := range uses {
		got[u.Scope+"/"+u.ID+"/"+u.Period] = u.Spent
	}
	want := map[string]int64{"team/ml/2026-11": 850, "team/ml/total": 850}
	if len(got) != len(want) || got["team/ml/2026-11"] != 850 || got["team/ml/total"] != 850 {
		t.Fatalf("uses %v, want %v", got, want)
	}
	var w BudgetWatcher
	fired := map[string]bool{}
	for _, e := range w.Check(uses, now) {
		fired[e.Data["scope"]+"/"+e.Data["id"]+"/"+e.Data["period"]+"/"+e.Data["threshold"]] = true
	}
	if len(fired) != 2 || !fired["team/ml/2026-11/50"] || !fired["team/ml/2026-11/80"] {
		t.Errorf("fired %v, want the team's monthly 50%% and 80%%", fired)
	}
}
