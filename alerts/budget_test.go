package alerts

import (
	"math"
	"testing"
	"time"
)

func TestBudgetCrossingsFireOnceEach(t *testing.T) {
	var w BudgetWatcher
	now := time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)
	fired := map[string]int{}
	use := func(scope, id, period string, spent int64) {
		for _, e := range w.Check([]BudgetUse{{Scope: scope, ID: id, Period: period, Currency: "USD", Spent: spent, Limit: 1000}}, now) {
			if e.Kind != KindBudget || e.Data["scope"] != scope || e.Data["id"] != id {
				t.Errorf("event %+v for %s %s", e, scope, id)
			}
			fired[scope+"/"+id+"/"+period+"/"+e.Data["threshold"]]++
		}
	}
	for _, spent := range []int64{100, 499, 500, 500, 700, 799, 800, 990, 1000, 1500, 2000} {
		use("key", "key_1", "2026-11", spent)
	}
	use("team", "ml", "total", 850) // a jump past two thresholds fires both
	use("team", "ml", "total", 900)
	use("key", "key_1", "2026-12", 600) // a new period fires again
	want := map[string]int{
		"key/key_1/2026-11/50": 1, "key/key_1/2026-11/80": 1, "key/key_1/2026-11/100": 1,
		"team/ml/total/50": 1, "team/ml/total/80": 1,
		"key/key_1/2026-12/50": 1,
	}
	if len(fired) != len(want) {
		t.Errorf("fired %v, want %v", fired, want)
	}
	for k, n := range want {
		if fired[k] != n {
			t.Errorf("%s fired %d times, want %d", k, fired[k], n)
		}
	}
}

func TestBudgetEventIDsAgreeAcrossWatchers(t *testing.T) {
	u := []BudgetUse{{Scope: "user", ID: "ann", Period: "total", Currency: "USD", Spent: 90, Limit: 100}}
	var a, b BudgetWatcher
	ea, eb := a.Check(u, time.Now()), b.Check(u, time.Now().Add(time.Hour))
	if len(ea) != 2 || len(eb) != 2 || ea[0].ID != eb[0].ID || ea[1].ID != eb[1].ID || ea[0].ID == ea[1].ID {
		t.Errorf("ids %v and %v: two watchers must derive the same ids, one per threshold", ea, eb)
	}
}

func TestReachedIsExact(t *testing.T) {
	for i, tc := range []struct {
		spent, limit, pct int64
		want              bool
	}{
		{499, 1000, 50, false},
		{500, 1000, 50, true},
		{math.MaxInt64 / 2, math.MaxInt64, 50, false}, // (2^63-1)/2 is just under half
		{math.MaxInt64/2 + 1, math.MaxInt64, 50, true},
		{math.MaxInt64, math.MaxInt64, 100, true},
		{0, 1, 50, false},
	} {
		if got := reached(tc.spent, tc.limit, tc.pct); got != tc.want {
			t.Errorf("Test %d: reached(%d, %d, %d) = %v", i, tc.spent, tc.limit, tc.pct, got)
		}
	}
}
