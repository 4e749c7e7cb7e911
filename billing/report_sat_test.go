package billing

import (
	"context"
	"math"
	"testing"

	"github.com/caddy-air/caddy-air/store"
)

// hugeAggregates is a store.Ledger whose aggregates and month totals are
// each within int64 but whose sums are not: two days of alice near the
// largest int64 in USD, and her month in two currencies.
type hugeAggregates struct{ store.Ledger }

// half is just over half the largest int64: two of them overflow.
const half = math.MaxInt64/2 + 1

func hugeTotals() store.Totals {
	return store.Totals{Requests: half, Usage: store.Usage{Input: half, Output: half}, Images: half,
		VideoMillis: half, Cost: half, Sources: map[string]int64{"reported": half}, Outcomes: map[string]int64{"ok": half}}
}

func (hugeAggregates) Usage(ctx context.Context, f store.UsageFilter, fn func(store.Aggregate) error) error {
	for _, d := range []string{"2025-03-10", "2025-03-11"} {
		k := store.AggregateKey{Day: d, User: "alice", KeyID: "k1", Model: "claude-x", Currency: "USD"}
		if err := fn(store.Aggregate{AggregateKey: k, Totals: hugeTotals()}); err != nil {
			return err
		}
	}
	return nil
}

func (hugeAggregates) MonthTotals(ctx context.Context, month string, fn func(store.UserTotals) error) error {
	for _, c := range []string{"EUR", "USD"} {
		if err := fn(store.UserTotals{User: "alice", Currency: c, Totals: hugeTotals()}); err != nil {
			return err
		}
	}
	return nil
}

// TestReportSumsSaturate checks that reports and the users list add
// aggregates whose sums pass the largest int64 up to it, not to a
// negative cost or count.
func TestReportSumsSaturate(t *testing.T) {
	te := newTestEngine(t)
	bl, _ := backends.Load(te.Ledger())
	l := NewLedger(hugeAggregates{bl.(store.Ledger)}, te.Ledger().intents, nil)
	t.Cleanup(func() { _ = l.Close() })
	const top = math.MaxInt64
	rep := report(t, l, ReportFilter{By: ByUser})
	if len(rep.Rows) != 1 || len(rep.Totals) != 1 {
		t.Fatalf("report = %+v; want one row and one total", rep)
	}
	for what, tt := range map[string]Totals{"row": rep.Rows[0].Totals, "total": rep.Totals[0].Totals} {
		if tt.Cost != top || tt.Requests != top || tt.Usage.Input != top || tt.Usage.Output != top ||
			tt.Images != top || tt.VideoMillis != top || tt.Sources[SourceReported] != top || tt.Outcomes["ok"] != top {
			t.Errorf("report %s = %+v; want every sum at %d", what, tt, int64(top))
		}
	}
	users, err := l.Users(context.Background(), "2025-03")
	if err != nil {
		t.Fatal(err)
	}
	if len(users) != 1 || users[0].Requests != top || users[0].Usage.Input != top || users[0].Unpriced != 0 {
		t.Errorf("users = %+v; want alice with %d requests and input tokens", users, int64(top))
	}
}
