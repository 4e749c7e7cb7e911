package storetest

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/caddy-air/caddy-air/store"
)

// checkUserRecords checks Ledger.UserRecords: paging through one user's
// records with any page size and filter returns exactly the matching
// written records, in write order (in its reverse with Desc), each once,
// and ends with an empty cursor; a malformed cursor is an error.
func checkUserRecords(t *testing.T, l store.Ledger, written []store.Record, when string) {
	t.Helper()
	ctx := context.Background()
	day := time.Date(2026, 3, 31, 0, 0, 0, 0, time.UTC)
	for i, q := range []store.RecordQuery{
		{User: "alice", Limit: 7},
		{User: "team/ä", Limit: 1000},
		{User: "bob", Model: "claude/y", Limit: 3},
		{User: "alice", KeyID: "key_01", Outcome: "partial", Limit: 2},
		{User: "bob", Since: day, Until: day.Add(24 * time.Hour), Limit: 5},
		{User: "nobody", Limit: 10},
		{User: "alice", Limit: 7, Desc: true},
		{User: "team/ä", Limit: 1000, Desc: true},
		{User: "bob", Model: "claude/y", Limit: 1, Desc: true},
		{User: "alice", KeyID: "key_01", Outcome: "partial", Limit: 2, Desc: true},
		{User: "bob", Since: day, Until: day.Add(24 * time.Hour), Limit: 5, Desc: true},
		{User: "nobody", Limit: 10, Desc: true},
	} {
		var want []string
		for j := range written {
			if q.Matches(&written[j]) {
				want = append(want, written[j].ID)
			}
		}
		if q.Desc {
			slices.Reverse(want)
		}
		var got []string
		pages := 0
		for {
			page, next, err := l.UserRecords(ctx, q)
			if err != nil {
				t.Fatalf("%s: Test %d: UserRecords(%+v) = %v", when, i, q, err)
			}
			if len(page) > q.Limit {
				t.Errorf("%s: Test %d: a page of %d records, limit %d", when, i, len(page), q.Limit)
			}
			for _, r := range page {
				got = append(got, r.ID)
			}
			pages++
			if next == "" || pages > len(written) {
				break
			}
			q.After = next
		}
		if !equal(got, want) {
			t.Errorf("%s: Test %d: paged %d records %v, want %d %v", when, i, len(got), got, len(want), want)
		}
		if len(want) > 0 && pages != (len(want)+q.Limit-1)/q.Limit && pages != (len(want)+q.Limit-1)/q.Limit+1 {
			t.Errorf("%s: Test %d: %d pages for %d records of %d", when, i, pages, len(want), q.Limit)
		}
	}
	if _, _, err := l.UserRecords(ctx, store.RecordQuery{User: "alice", Limit: 1, After: "not a cursor"}); err == nil {
		t.Errorf("%s: a malformed cursor was accepted", when)
	}
	if _, _, err := l.UserRecords(ctx, store.RecordQuery{User: "alice", Limit: 1, After: "not a cursor", Desc: true}); err == nil {
		t.Errorf("%s: a malformed cursor was accepted newest first", when)
	}
}

// checkMonthTotals checks Ledger.MonthTotals: every user's totals per
// currency of each month equal the sums of the written records.
func checkMonthTotals(t *testing.T, l store.Ledger, written []store.Record, when string) {
	t.Helper()
	type key struct{ month, user, currency string }
	want := map[key]*store.Totals{}
	for i := range written {
		r := &written[i]
		k := key{store.MonthOf(r.Time), r.User, r.Currency}
		if want[k] == nil {
			want[k] = &store.Totals{}
		}
		want[k].Add(r)
	}
	for _, month := range []string{"2026-03", "2026-04", "2026-05"} {
		got := map[key]store.Totals{}
		err := l.MonthTotals(context.Background(), month, func(u store.UserTotals) error {
			got[key{month, u.User, u.Currency}] = u.Totals
			return nil
		})
		if err != nil {
			t.Fatalf("%s: MonthTotals(%s): %v", when, month, err)
		}
		n := 0
		for k, w := range want {
			if k.month != month {
				continue
			}
			n++
			g, ok := got[k]
			if !ok || g.Requests != w.Requests || g.Unpriced != w.Unpriced || g.Usage != w.Usage || g.Cost != w.Cost ||
				g.Images != w.Images || g.VideoMillis != w.VideoMillis {
				t.Errorf("%s: %v: totals %+v, want %+v", when, k, g, *w)
			}
		}
		if len(got) != n {
			t.Errorf("%s: MonthTotals(%s) has %d users and currencies, want %d", when, month, len(got), n)
		}
	}
}
