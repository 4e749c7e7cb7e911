package badger

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/caddy-air/caddy-air/store"
	"github.com/caddy-air/caddy-air/store/badger/journal"
)

var day0 = time.Date(2025, 3, 10, 12, 0, 0, 0, time.UTC)

func testRecord(id string, cost int64) store.Record {
	return store.Record{
		ID: id, Time: day0, Endpoint: "chat", User: "alice", KeyID: "key_1", Model: "claude-x",
		Usage: store.Usage{Input: 100, Output: 10}, Source: "reported", Status: 200, Outcome: "ok",
		Priced: true, Currency: "USD", Cost: cost,
	}
}

// openDB opens a real Badger store in a temporary directory.
func openDB(t testing.TB) *DB {
	t.Helper()
	db, err := Open(Options{Dir: t.TempDir(), GCInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// openLedger opens a ledger on db with its journal in dir, closed at the
// end of the test if it is still open.
func openLedger(t testing.TB, db KV, dir string) *Ledger {
	t.Helper()
	l, err := OpenLedger(db, dir, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// ids lists the IDs of l's records.
func ids(t testing.TB, l *Ledger) string {
	t.Helper()
	var out []string
	if err := l.Records(context.Background(), time.Time{}, time.Time{}, func(r store.Record) error {
		out = append(out, r.ID)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprint(out)
}

// usdTotals sums l's aggregates in USD.
func usdTotals(t testing.TB, l *Ledger) store.Totals {
	t.Helper()
	var tot store.Totals
	if err := l.Usage(context.Background(), store.UsageFilter{}, func(a store.Aggregate) error {
		if a.Currency == "USD" {
			tot.Merge(&a.Totals)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return tot
}

// TestAppendKeepsNoKeyPerRecord checks that appended records are counted
// in the DB without a key of their own, not even an ID index entry: the
// DB holds what the records add up to, never the records.
func TestAppendKeepsNoKeyPerRecord(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	l := openLedger(t, db, t.TempDir())
	var batch []store.Record
	for i := range 50 {
		batch = append(batch, testRecord(fmt.Sprintf("req-%02d", i), int64(i+1)))
	}
	if err := l.Append(ctx, batch); err != nil {
		t.Fatal(err)
	}
	if err := l.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if tot := usdTotals(t, l); tot.Requests != 50 || tot.Cost != 50*51/2 {
		t.Errorf("aggregate %+v, want 50 requests costing %d", tot, 50*51/2)
	}
	// The record index holds one key per user and stretch of the
	// journal, not one per record.
	indexKeys := 0
	err := db.Scan(ctx, nil, ScanOptions{KeysOnly: true}, func(k, _ []byte) error {
		key := string(k)
		if strings.HasPrefix(key, prefixUserRecords) {
			indexKeys++
			return nil
		}
		if !strings.HasPrefix(key, prefixAggregates) && !strings.HasPrefix(key, prefixUserAggs) && !strings.HasPrefix(key, prefixMonthUsers) &&
			!strings.HasPrefix(key, prefixSpend) && key != keyJournalCount && key != keyUserAggsBuilt && key != keyUserRecsBuilt {
			t.Errorf("the store has key %q: appended records must only be counted there", key)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if indexKeys != 1 {
		t.Errorf("%d record index keys for 50 records of one user, want 1", indexKeys)
	}
}

// TestLedgerCountsUncountedRecords checks that records that reached the
// journal but not the DB, as when the gateway is killed between the two,
// are counted when the ledger is opened again, once.
func TestLedgerCountsUncountedRecords(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	dir := t.TempDir()
	l := openLedger(t, db, dir)
	if _, err := l.Insert(ctx, testRecord("counted", 100)); err != nil {
		t.Fatal(err)
	}
	l.Close()

	// Append what a killed gateway left: records beyond the DB's count,
	// one of them written with Insert, the other appended.
	j, err := journal.Open(journal.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	var entries [][]byte
	for _, e := range []struct {
		id      string
		indexed bool
	}{{"task-1", true}, {"req-1", false}} {
		rec := testRecord(e.id, 10)
		b := appendEntry(nil, &rec, e.indexed, time.Now())
		entries = append(entries, b)
	}
	if _, _, err := j.Append(entries); err != nil {
		t.Fatal(err)
	}
	j.Close()

	for round := range 2 {
		l := openLedger(t, db, dir)
		if got := ids(t, l); got != "[counted task-1 req-1]" {
			t.Errorf("round %d: records %s", round, got)
		}
		if tot := usdTotals(t, l); tot.Requests != 3 || tot.Cost != 120 {
			t.Errorf("round %d: aggregate %+v, want 3 requests costing 120", round, tot)
		}
		if rec, err := l.Get(ctx, "task-1"); err != nil || rec.Cost != 10 {
			t.Errorf("round %d: Get(task-1) = %+v, %v", round, rec, err)
		}
		if fresh, err := l.Insert(ctx, testRecord("task-1", 10)); err != nil || fresh {
			t.Errorf("round %d: Insert(task-1) again = %v, %v; want a no-op", round, fresh, err)
		}
		l.Close()
	}
}

// TestLegacyRecordsAreNotRead checks what becomes of records that versions
// before the journal kept in the key-value store: they are no longer read
// (Get, Records), their index entries still make Insert of their ID a
// no-op, and their aggregates still count.
func TestLegacyRecordsAreNotRead(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	old := testRecord("old-1", 700)
	oldKey := []byte("l/t/" + day0.Format("20060102T150405.000000000Z") + "/old-1")
	j, _ := json.Marshal(map[string]any{"id": "old-1"})
	if err := db.Set(ctx, oldKey, j, 0); err != nil {
		t.Fatal(err)
	}
	if err := db.Set(ctx, recordIDKey(old.ID), oldKey, 0); err != nil {
		t.Fatal(err)
	}
	l := openLedger(t, db, t.TempDir())
	if _, err := l.Get(ctx, old.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Get of a legacy record: %v, want not found", err)
	}
	if fresh, err := l.Insert(ctx, old); err != nil || fresh {
		t.Errorf("Insert of a legacy record's ID = %v, %v; want a no-op", fresh, err)
	}
	if got := ids(t, l); got != "[]" {
		t.Errorf("records %s, want none", got)
	}
}

func TestStoredRecordRoundTrip(t *testing.T) {
	full := store.Record{
		ID: "req_0f8c/ä b", Time: time.Date(2026, 11, 21, 20, 42, 35, 123456789, time.UTC),
		Endpoint: "messages", User: "team/alice", KeyID: "key_abc", Model: "claude-sonnet-4-5", Provider: "anthropic",
		Usage:  store.Usage{Input: 50_000, CacheCreation: 1_000, CacheRead: 20_000, Output: 2_000, Reasoning: 300},
		Source: "partial", Status: 200, Outcome: "partial", Images: 2, VideoMillis: 4_000,
		Tier: 1, Priced: true, Currency: "CNY", Cost: 580_000_000,
	}
	appended := time.Date(2026, 11, 21, 20, 43, 0, 5, time.UTC)
	for _, tc := range []struct {
		name    string
		rec     store.Record
		indexed bool
	}{
		{"every field", full, true},
		{"unpriced, zero usage", store.Record{ID: "rec_1", Time: day0, Endpoint: "chat", User: "bob", Model: "m", Tier: -1}, false},
		{"negative cost", store.Record{ID: "refund", Time: day0, Priced: true, Currency: "USD", Cost: -5}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := appendEntry(nil, &tc.rec, tc.indexed, appended)
			e, err := decodeEntry(b)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(e.rec, tc.rec) || e.indexed != tc.indexed || !e.appended.Equal(appended) {
				t.Errorf("entry round trip:\n got %+v %v %v\nwant %+v %v %v", e.rec, e.indexed, e.appended, tc.rec, tc.indexed, appended)
			}
		})
	}

	// The point of the format: a typical record is far smaller than its
	// JSON.
	rec := testRecord("req_3b241101-e2bb-4255-8caf-4136c566a962", 1234567)
	v := appendEntry(nil, &rec, false, appended)
	j, _ := json.Marshal(rec)
	t.Logf("entry %d bytes, JSON %d", len(v), len(j))
	if 2*len(v) > len(j) {
		t.Errorf("entry is %d bytes, its JSON %d: want at most half", len(v), len(j))
	}
}

func TestDecodeEntryRejects(t *testing.T) {
	good := appendEntry(nil, &store.Record{ID: "x", Time: day0}, false, day0)
	for _, b := range [][]byte{nil, good[:10], good[:12], append([]byte{0x01}, good[1:]...),
		append(good[:10:10], 0xff, 0xff, 0xff, 0x0f)} {
		if _, err := decodeEntry(b); err == nil {
			t.Errorf("decodeEntry(%x) accepted", b)
		}
	}
}

// TestTotalsKeepTheirFormat checks that aggregates and limits are kept in
// the JSON that versions before the seam wrote (costs as decimal strings
// of currency units), so that existing stores read the same.
func TestTotalsKeepTheirFormat(t *testing.T) {
	old := `{"requests":3,"unpriced":1,"usage":{"input_tokens":10,"output_tokens":5},"images":0,"video_ms":0,"cost":"0.000001500","sources":{"reported":3}}`
	tot, err := decodeTotals([]byte(old))
	if err != nil || tot.Requests != 3 || tot.Cost != 1500 || tot.Usage.Input != 10 || tot.Sources["reported"] != 3 {
		t.Fatalf("decoded %+v, %v", tot, err)
	}
	b, err := encodeTotals(&tot)
	if err != nil || string(b) != old {
		t.Errorf("encoded\n %s\nwant\n %s", b, old)
	}
	lim, err := decodeLimits([]byte(`{"currency":"USD","monthly":"10","total":2.5,"rpm":60}`))
	if err != nil || lim.Monthly != 10_000_000_000 || lim.Total != 2_500_000_000 || lim.RPM != 60 {
		t.Errorf("limits %+v, %v", lim, err)
	}
}
