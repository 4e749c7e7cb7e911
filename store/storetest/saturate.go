package storetest

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/caddy-air/caddy-air/store"
)

// runLedgerSaturates appends records whose costs, token counts and video
// sum past the largest int64, within one batch and across batches, for
// one user, day, key, model and currency: every batch is stored (the
// ledger does not wedge on them), the records after them too, and the
// aggregates, the month's totals and the spend counters stay at the
// largest int64 instead of failing or wrapping to a small or negative
// sum, also after a restart.
func runLedgerSaturates(t *testing.T, b Backend) {
	ctx := context.Background()
	h := b.open(t)
	day := time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)
	const huge = math.MaxInt64
	big := func(id string, cost int64) store.Record {
		return store.Record{ID: id, Time: day, Endpoint: "chat", User: "alice", KeyID: "k1", Model: "m",
			Provider: "p", Usage: store.Usage{Input: huge, CacheCreation: huge, CacheCreation1h: huge, CacheRead: huge,
				Output: huge, Reasoning: huge}, VideoMillis: huge, Source: "upstream", Status: 200, Outcome: "ok",
			Tier: -1, Priced: true, Currency: "USD", Cost: cost}
	}
	small := big("bob1", 7)
	small.User, small.KeyID, small.Usage, small.VideoMillis = "bob", "k2", store.Usage{Input: 3, Output: 2}, 0
	// Within one batch, then onto the stored sums in later batches (an
	// append and an insert), then a record of someone else.
	must(t, h.r.Ledger.Append(ctx, []store.Record{big("a1", huge), big("a2", huge)}))
	must(t, h.r.Ledger.Append(ctx, []store.Record{big("a3", 1)}))
	if fresh, err := h.r.Ledger.Insert(ctx, big("a4", huge/2)); err != nil || !fresh {
		t.Fatalf("Insert(a4) = %v, %v; want a new record", fresh, err)
	}
	must(t, h.r.Ledger.Append(ctx, []store.Record{small}))
	must(t, h.r.Ledger.Flush(ctx))
	check := func(when string) {
		t.Helper()
		if err := h.r.Ledger.Err(); err != nil {
			t.Fatalf("%s: Err = %v; want a healthy ledger", when, err)
		}
		var ids []string
		must(t, h.r.Ledger.Records(ctx, time.Time{}, time.Time{}, func(r store.Record) error {
			ids = append(ids, r.ID)
			return nil
		}))
		if got := fmt.Sprint(ids); got != "[a1 a2 a3 a4 bob1]" {
			t.Errorf("%s: records %s; want [a1 a2 a3 a4 bob1]", when, got)
		}
		aggs := map[string]store.Totals{}
		must(t, h.r.Ledger.Usage(ctx, store.UsageFilter{}, func(a store.Aggregate) error {
			aggs[a.User] = a.Totals
			return nil
		}))
		checkSaturated(t, when+": aggregate of alice", aggs["alice"])
		if a := aggs["alice"]; a.Outcomes["ok"] != 4 || a.Sources["upstream"] != 4 {
			t.Errorf("%s: aggregate of alice = %+v; want 4 requests by outcome and source", when, a)
		}
		if bob := aggs["bob"]; bob.Requests != 1 || bob.Cost != 7 || bob.Usage.Input != 3 {
			t.Errorf("%s: aggregate of bob = %+v; want 1 request costing 7", when, bob)
		}
		months := map[string]store.Totals{}
		must(t, h.r.Ledger.MonthTotals(ctx, store.MonthOf(day), func(u store.UserTotals) error {
			months[u.User] = u.Totals
			return nil
		}))
		checkSaturated(t, when+": month totals of alice", months["alice"])
		if bob := months["bob"]; bob.Requests != 1 || bob.Cost != 7 {
			t.Errorf("%s: month totals of bob = %+v; want 1 request costing 7", when, bob)
		}
		spend := map[store.Spend]int64{}
		must(t, h.r.Budgets.Spend(ctx, func(s store.Spend) error {
			amt := s.Amount
			s.Amount = 0
			spend[s] = amt
			return nil
		}))
		for _, s := range []struct {
			sub  store.Subject
			want int64
		}{
			{store.Subject{Scope: store.ScopeUser, ID: "alice"}, huge},
			{store.Subject{Scope: store.ScopeKey, ID: "k1"}, huge},
			{store.Subject{Scope: store.ScopeUser, ID: "bob"}, 7},
			{store.Subject{Scope: store.ScopeKey, ID: "k2"}, 7},
		} {
			for _, p := range []string{store.MonthOf(day), store.PeriodTotal} {
				if got := spend[store.Spend{Subject: s.sub, Currency: "USD", Period: p}]; got != s.want {
					t.Errorf("%s: spend of %v in %s = %d; want %d", when, s.sub, p, got, s.want)
				}
			}
		}
	}
	check("at once")
	b.reopen(t, h)
	check("after reopening")
}

// runBudgetsSaturated checks that a budget whose spend stands at the
// largest int64 has no room left, whatever its limit and its leases:
// limit minus spend minus leases must not wrap around to room. The lease
// is taken under a larger limit, which is lowered afterwards.
func runBudgetsSaturated(t *testing.T, b Backend) {
	ctx := context.Background()
	h := b.open(t)
	now := time.Now().UTC()
	for user, l := range map[string]store.Limits{"alice": {Currency: "USD", Monthly: 1000}, "bob": {Currency: "USD", Total: 1000}} {
		sub := store.Subject{Scope: store.ScopeUser, ID: user}
		must(t, h.r.Budgets.SetLimits(ctx, sub, l))
		held, err := h.r.Budgets.Reserve(ctx, sub, "USD", 900, now, time.Hour)
		if err != nil || held.Amount != 900 {
			t.Fatalf("Reserve for %s under %+v = %+v, %v; want 900", user, l, held, err)
		}
		rec := store.Record{ID: user, Time: now, Endpoint: "chat", User: user, KeyID: "k-" + user, Model: "m",
			Status: 200, Tier: -1, Priced: true, Currency: "USD", Cost: math.MaxInt64}
		must(t, h.r.Ledger.Append(ctx, []store.Record{rec}))
		must(t, h.r.Ledger.Flush(ctx))
		l.Monthly, l.Total = l.Monthly/10, l.Total/10
		must(t, h.r.Budgets.SetLimits(ctx, sub, l))
		got, err := h.r.Budgets.Reserve(ctx, sub, "USD", 10, now, time.Hour)
		if err != nil || got.Amount != 0 {
			t.Errorf("Reserve for %s under %+v with the spend at the largest int64 = %+v, %v; want nothing",
				user, l, got, err)
		}
	}
}

// checkSaturated checks that got counts 4 records and that every sum of
// got stands at the largest int64.
func checkSaturated(t *testing.T, what string, got store.Totals) {
	t.Helper()
	u := got.Usage
	for _, n := range []int64{got.Cost, got.VideoMillis, u.Input, u.CacheCreation, u.CacheCreation1h, u.CacheRead, u.Output, u.Reasoning} {
		if n != math.MaxInt64 {
			t.Errorf("%s = %+v; want every sum at %d", what, got, int64(math.MaxInt64))
			break
		}
	}
	if got.Requests != 4 {
		t.Errorf("%s = %+v; want 4 requests", what, got)
	}
}
