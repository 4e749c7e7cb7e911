package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/caddy-air/caddy-air/store"
)

// TestLedgerBatchEdges appends batches that hold a record twice, a record
// already stored, and a record a fraction of a microsecond before a
// month's end: each record is stored and counted once, on the day and in
// the month of its own time.
func TestLedgerBatchEdges(t *testing.T) {
	ctx := context.Background()
	l := instances(t, 1)[0].Repos().Ledger
	late := time.Date(2026, 1, 31, 23, 59, 59, 999_999_900, time.UTC)
	a, b := rec("a", 1000), rec("b", 20)
	a.Time, b.Time = late, late
	b.Outcome, b.Source = "partial", "estimated"
	if err := l.Append(ctx, []store.Record{a, a, b}); err != nil {
		t.Fatal(err)
	}
	if n, err := l.Insert(ctx, b); err != nil || n {
		t.Fatalf("Insert of a stored record = %t, %v; want a no-op", n, err)
	}
	c := rec("c", 300)
	c.Time = late.Add(time.Second) // in February
	if err := l.Append(ctx, []store.Record{a, c, b}); err != nil {
		t.Fatal(err)
	}
	got, err := l.Get(ctx, "a")
	if err != nil || !got.Time.Equal(late.Truncate(time.Microsecond)) {
		t.Errorf("Get(a) = %v, %v; want its time cut to the microsecond, %v", got.Time, err, late.Truncate(time.Microsecond))
	}
	days := map[string]store.Totals{}
	if err := l.Usage(ctx, store.UsageFilter{}, func(a store.Aggregate) error { days[a.Day] = a.Totals; return nil }); err != nil {
		t.Fatal(err)
	}
	jan, feb := days["2026-01-31"], days["2026-02-01"]
	if len(days) != 2 || jan.Requests != 2 || jan.Cost != 1020 || feb.Requests != 1 || feb.Cost != 300 {
		t.Errorf("aggregates by day = %+v; want 2 requests costing 1020 on 2026-01-31, 1 costing 300 on 2026-02-01", days)
	}
	if jan.Outcomes["ok"] != 1 || jan.Outcomes["partial"] != 1 || jan.Sources["upstream"] != 1 || jan.Sources["estimated"] != 1 {
		t.Errorf("counts on 2026-01-31 = %v %v; want one of each", jan.Outcomes, jan.Sources)
	}
	months := map[string]int64{}
	for _, m := range []string{"2026-01", "2026-02"} {
		if err := l.MonthTotals(ctx, m, func(u store.UserTotals) error { months[m] += u.Requests; return nil }); err != nil {
			t.Fatal(err)
		}
	}
	if months["2026-01"] != 2 || months["2026-02"] != 1 {
		t.Errorf("month totals = %v; want 2 requests in 2026-01 and 1 in 2026-02", months)
	}
}
