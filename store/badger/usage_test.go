package badger

import (
	"context"
	"fmt"
	"testing"

	"github.com/caddy-air/caddy-air/store"
)

// TestUserIndexBuiltForOldStores checks that a store written before the
// usage index by user gets it at its next start: one user's usage is
// complete, whether the index was there or not.
func TestUserIndexBuiltForOldStores(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	dir := t.TempDir()
	l, err := OpenLedger(db, dir, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	var recs []store.Record
	for i := range 30 {
		r := testRecord(fmt.Sprintf("r%d", i), 1)
		r.User, r.Time = []string{"alice", "bob", "team/ä"}[i%3], day0.AddDate(0, 0, i%5)
		recs = append(recs, r)
	}
	if err := l.Append(ctx, recs); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	requests := func(l *Ledger, user string) (n int64) {
		t.Helper()
		err := l.Usage(ctx, store.UsageFilter{User: user, Since: day0.AddDate(0, 0, 1).Format(store.DayLayout)}, func(a store.Aggregate) error {
			if a.User != user {
				t.Errorf("Usage(%s) returned %s's aggregate", user, a.User)
			}
			n += a.Requests
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	// Remove the index, as a store of an older version has none.
	var idx [][]byte
	_ = db.Scan(ctx, []byte(prefixUserAggs), ScanOptions{KeysOnly: true}, func(k, _ []byte) error {
		idx = append(idx, append([]byte{}, k...))
		return nil
	})
	if len(idx) != 15 {
		t.Fatalf("%d index entries for 3 users on 5 days, want 15", len(idx))
	}
	for _, p := range []string{prefixMonthUsers, prefixUserRecords} {
		_ = db.Scan(ctx, []byte(p), ScanOptions{KeysOnly: true}, func(k, _ []byte) error {
			idx = append(idx, append([]byte{}, k...))
			return nil
		})
	}
	for _, k := range append(idx, []byte(keyUserAggsBuilt), []byte(keyUserRecsBuilt)) {
		if err := db.Delete(ctx, k); err != nil {
			t.Fatal(err)
		}
	}
	l2 := openLedger(t, db, dir)
	for _, user := range []string{"alice", "bob", "team/ä"} {
		if n := requests(l2, user); n != 8 {
			t.Errorf("after rebuilding the index: %s has %d requests from day 1 on, want 8", user, n)
		}
	}
	months := map[string]bool{store.MonthOf(day0): true, store.MonthOf(day0.AddDate(0, 0, 4)): true}
	perUser := map[string]int64{}
	for m := range months {
		err := l2.MonthTotals(ctx, m, func(u store.UserTotals) error { perUser[u.User] += u.Requests; return nil })
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(perUser) != 3 || perUser["alice"] != 10 || perUser["team/ä"] != 10 {
		t.Errorf("after rebuilding: month totals %v, want 10 requests for each of 3 users", perUser)
	}
	page, next, err := l2.UserRecords(ctx, store.RecordQuery{User: "team/ä", Limit: 100})
	if err != nil || len(page) != 10 || next != "" || page[0].ID != "r2" {
		t.Errorf("after rebuilding: records of team/ä: %d, %q, %v; want 10 from r2", len(page), next, err)
	}
}

// TestCountBurstOfManyUsers checks that a burst of records of many
// distinct users, more aggregates and counters than one transaction
// takes, is counted in full (from the journal, in batches).
func TestCountBurstOfManyUsers(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	l := openLedger(t, db, t.TempDir())
	var recs []store.Record
	for i := range 3000 {
		r := testRecord(fmt.Sprintf("r%d", i), 1)
		r.User, r.KeyID = fmt.Sprintf("user-%d", i), fmt.Sprintf("key-%d", i)
		recs = append(recs, r)
	}
	if err := l.Append(ctx, recs); err != nil {
		t.Fatal(err)
	}
	if err := l.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	var n int64
	if err := l.Usage(ctx, store.UsageFilter{}, func(a store.Aggregate) error { n += a.Requests; return nil }); err != nil {
		t.Fatal(err)
	}
	if n != 3000 {
		t.Errorf("%d requests counted, want 3000", n)
	}
}
