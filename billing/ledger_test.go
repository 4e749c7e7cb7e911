package billing

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caddy-air/caddy-air/store"
	"github.com/caddy-air/caddy-air/store/badger"
)

var day0 = time.Date(2025, 3, 10, 12, 0, 0, 0, time.UTC)

func testRecord(id string, cost Amount) Record {
	return Record{
		ID: id, Time: day0, Endpoint: EndpointChat, User: "alice", KeyID: "key_1", Model: "claude-x",
		Usage: Usage{Input: 100, Output: 10}, Source: SourceReported, Status: 200, Outcome: OutcomeOK,
		Priced: true, Currency: "USD", Cost: cost,
	}
}

func TestLedgerWriteIdempotent(t *testing.T) {
	ctx := context.Background()
	l := newLedger(t, openStore(t), 0)

	// The second write of the same ID is a no-op.
	for i, want := range []bool{true, false} {
		fresh, err := l.Write(ctx, testRecord("sync-1", 1000))
		if err != nil || fresh != want {
			t.Fatalf("Test %d: Write = %v, %v; want %v", i, fresh, err, want)
		}
	}
	// So is a write of a known ID with other content.
	if fresh, err := l.Write(ctx, testRecord("sync-1", 5)); err != nil || fresh {
		t.Errorf("Write of a known ID with another cost = %v, %v", fresh, err)
	}
	if fresh, err := l.Write(ctx, testRecord("sync-2", 2000)); err != nil || !fresh {
		t.Fatalf("Write(sync-2) = %v, %v", fresh, err)
	}

	if n := countRecords(t, l); n != 2 {
		t.Errorf("%d records, want 2", n)
	}
	tot := totalIn(report(t, l, ReportFilter{}), "USD")
	if tot.Requests != 2 || tot.Cost != 3000 || tot.Usage.Input != 200 {
		t.Errorf("aggregate counted duplicates: %+v", tot)
	}
	rec, err := l.Get(ctx, "sync-2")
	if err != nil || rec.Cost != 2000 || rec.User != "alice" || !rec.Time.Equal(day0) {
		t.Errorf("Get = %+v, %v", rec, err)
	}
	if _, err := l.Get(ctx, "missing"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Get(missing) error %v", err)
	}
}

// TestLedgerEnqueueAppends checks that queued records are all written and
// counted, and that they get no ID index entry.
func TestLedgerEnqueueAppends(t *testing.T) {
	ctx := context.Background()
	l := newLedger(t, openStore(t), 0)
	var mu sync.Mutex
	acked := map[string]int{}
	for i := range 50 {
		id := fmt.Sprintf("req-%02d", i)
		l.Enqueue(testRecord(id, Amount(i+1)), func(err error) {
			if err != nil {
				t.Errorf("write %s: %v", id, err)
			}
			mu.Lock()
			acked[id]++
			mu.Unlock()
		})
	}
	if err := l.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if len(acked) != 50 {
		t.Errorf("%d records acknowledged, want 50", len(acked))
	}
	if n := countRecords(t, l); n != 50 {
		t.Errorf("%d records, want 50", n)
	}
	if tot := totalIn(report(t, l, ReportFilter{}), "USD"); tot.Requests != 50 || tot.Cost != 50*51/2 {
		t.Errorf("aggregate %+v, want 50 requests costing %d", tot, 50*51/2)
	}

	if _, err := l.Get(ctx, "req-00"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Get of an appended record: %v, want not found (no index)", err)
	}
}

// TestLedgerRecordsRange checks that Records returns exactly the records
// of [since, until), in the order they were written.
func TestLedgerRecordsRange(t *testing.T) {
	ctx := context.Background()
	l := newLedger(t, openStore(t), 0)
	for i := range 10 {
		rec := testRecord(fmt.Sprintf("r%d", i), 1)
		rec.Time = day0.Add(time.Duration(i) * time.Hour)
		l.Enqueue(rec, nil)
	}
	if err := l.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		since, until time.Time
		want         string
	}{
		{time.Time{}, time.Time{}, "[r0 r1 r2 r3 r4 r5 r6 r7 r8 r9]"},
		{day0.Add(3 * time.Hour), day0.Add(6 * time.Hour), "[r3 r4 r5]"},
		{day0.Add(3*time.Hour + time.Nanosecond), time.Time{}, "[r4 r5 r6 r7 r8 r9]"},
		{time.Time{}, day0.Add(time.Hour), "[r0]"},
		{day0.Add(20 * time.Hour), time.Time{}, "[]"},
	}
	for i, tt := range tests {
		if got := fmt.Sprint(recordIDs(t, l, tt.since, tt.until)); got != tt.want {
			t.Errorf("Test %d: Records(%v, %v) = %s, want %s", i, tt.since, tt.until, got, tt.want)
		}
	}
}

func TestLedgerRetention(t *testing.T) {
	ctx := context.Background()
	l := newLedger(t, openStore(t), 2*time.Second)
	if fresh, err := l.Write(ctx, testRecord("short-lived", 5)); err != nil || !fresh {
		t.Fatalf("Write = %v, %v", fresh, err)
	}
	if _, err := l.Get(ctx, "short-lived"); err != nil {
		t.Fatalf("fresh record: %v", err)
	}
	time.Sleep(3 * time.Second)
	if _, err := l.Get(ctx, "short-lived"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("expired record: %v", err)
	}
	if n := countRecords(t, l); n != 0 {
		t.Errorf("%d records left after the retention", n)
	}
	// Aggregates outlive the records.
	if tot := totalIn(report(t, l, ReportFilter{}), "USD"); tot.Requests != 1 || tot.Cost != 5 {
		t.Errorf("aggregate after the retention: %+v", tot)
	}
}

func TestLedgerCloseDrains(t *testing.T) {
	s := openStore(t)
	dir := t.TempDir()
	l := newLedgerIn(t, s, dir, 0)
	const n = 3 * maxBatch
	var acked sync.WaitGroup
	acked.Add(n)
	for i := range n {
		l.Enqueue(testRecord(fmt.Sprintf("r%d", i), 1), func(error) { acked.Done() })
	}
	if err := closeLedger(l); err != nil {
		t.Fatal(err)
	}
	acked.Wait()
	// Enqueue after Close reports the failure.
	failed := make(chan error, 1)
	l.Enqueue(testRecord("late", 1), func(err error) { failed <- err })
	if err := <-failed; err == nil {
		t.Error("record enqueued after Close reported success")
	}
	l2 := newLedgerIn(t, s, dir, 0)
	if got := countRecords(t, l2); got != n {
		t.Errorf("%d records after Close, want %d", got, n)
	}
	if tot := totalIn(report(t, l2, ReportFilter{}), "USD"); tot.Requests != n || tot.Cost != n {
		t.Errorf("aggregate after Close: %+v", tot)
	}
}

// failingStore fails the next fail transactions of its Store.
type failingStore struct {
	badger.KV
	fail atomic.Int32
}

func (f *failingStore) Update(ctx context.Context, fn func(badger.Txn) error) error {
	if f.fail.Add(-1) >= 0 {
		return errors.New("disk on fire")
	}
	return f.KV.Update(ctx, fn)
}

// TestLedgerFailedCommitLeavesNoRecord checks that a batch the store could
// not count is cut off the journal again: it is reported as failed, and
// neither read nor counted later.
func TestLedgerFailedCommitLeavesNoRecord(t *testing.T) {
	ctx := context.Background()
	fs := &failingStore{KV: openStore(t)}
	dir := t.TempDir()
	l := newLedgerIn(t, fs, dir, 0)
	if _, err := l.Write(ctx, testRecord("before", 1)); err != nil {
		t.Fatal(err)
	}
	fs.fail.Store(1)
	if _, err := l.Write(ctx, testRecord("failed", 50)); err == nil {
		t.Fatal("Write succeeded on a failing store")
	}
	errs := make(chan error, 1)
	l.Enqueue(testRecord("after", 2), func(err error) { errs <- err })
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
	// Durable is not yet counted: Flush waits for the store to count it.
	if err := l.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	check := func(l *Ledger, when string) {
		if ids := fmt.Sprint(recordIDs(t, l, time.Time{}, time.Time{})); ids != "[before after]" {
			t.Errorf("%s: records %s", when, ids)
		}
		if tot := totalIn(report(t, l, ReportFilter{}), "USD"); tot.Requests != 2 || tot.Cost != 3 {
			t.Errorf("%s: aggregate %+v", when, tot)
		}
	}
	check(l, "at once")
	closeLedger(l)
	check(newLedgerIn(t, fs, dir, 0), "after reopening")
}

// TestLedgerJournalLost checks that a ledger whose journal lost records
// the store counts, as after a crash of the machine, still opens and
// writes.
func TestLedgerJournalLost(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	l := newLedger(t, s, 0)
	if _, err := l.Write(ctx, testRecord("lost", 1)); err != nil {
		t.Fatal(err)
	}
	closeLedger(l)
	l = newLedger(t, s, 0) // an empty journal
	if _, err := l.Write(ctx, testRecord("new", 2)); err != nil {
		t.Fatal(err)
	}
	if ids := fmt.Sprint(recordIDs(t, l, time.Time{}, time.Time{})); ids != "[new]" {
		t.Errorf("records %s", ids)
	}
}

// TestAggregatesEqualRecords writes random usage streams through the engine
// and the real ledger on Badger, resending some task records (the path
// whose IDs may come again), and checks that every report equals the sum of
// the distinct records it covers, exactly.
func TestAggregatesEqualRecords(t *testing.T) {
	for seed := int64(1); seed <= 4; seed++ {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) { checkAggregates(t, seed) })
	}
}

func checkAggregates(t *testing.T, seed int64) {
	r := rand.New(rand.NewSource(seed))
	te := newTestEngine(t)
	users := []string{"alice", "bob", "carol/x"}
	keys := []string{"key_1", "key_2", "key_3", "key 4"}
	models := []string{"qwen3-max", "claude-x", "claude-y", "tiny", "unpriced-model", "gpt-image-1", "veo-3-fast"}
	sources := []Source{SourceReported, SourcePartial, SourceEstimated}
	distinct := map[string]Record{}
	var charged []string
	for i := range 400 {
		if len(charged) > 0 && r.Intn(10) == 0 {
			// Charge an earlier task record again: it must not count twice.
			if _, _, err := te.Charge(context.Background(), distinct[charged[r.Intn(len(charged))]]); err != nil {
				t.Fatal(err)
			}
			continue
		}
		rec := Record{
			ID:       fmt.Sprintf("req-%d-%d", seed, i),
			Time:     day0.Add(time.Duration(r.Intn(5*24)) * time.Hour),
			Endpoint: EndpointChat,
			User:     users[r.Intn(len(users))],
			KeyID:    keys[r.Intn(len(keys))],
			Model:    models[r.Intn(len(models))],
			Usage: Usage{
				Input: r.Int63n(200_000), CacheCreation: r.Int63n(5_000), CacheRead: r.Int63n(50_000),
				Output: r.Int63n(20_000),
			},
			Source:  sources[r.Intn(len(sources))],
			Outcome: OutcomeOK,
			Images:  r.Intn(3),
		}
		switch r.Intn(3) {
		case 0:
			res, aerr := te.Admit(context.Background(), Subject{User: rec.User, KeyID: rec.KeyID}, rec.Model, Usage{})
			if aerr != nil {
				t.Fatal(aerr)
			}
			rec = res.Settle(rec)
		case 1:
			var err error
			if rec, _, err = te.Charge(context.Background(), rec); err != nil {
				t.Fatal(err)
			}
			charged = append(charged, rec.ID)
		default:
			rec = te.price(rec)
			te.Ledger().Enqueue(rec, nil)
		}
		distinct[rec.ID] = rec
	}
	te.flush(t)

	filters := []ReportFilter{
		{},
		{User: "carol/x"},
		{KeyID: "key 4", Model: "qwen3-max"},
		{Since: day0.Add(24 * time.Hour), Until: day0.Add(72 * time.Hour)},
		{User: "alice", Since: day0.Add(48 * time.Hour)},
	}
	for i, f := range filters {
		want := map[string]*Totals{}
		for _, rec := range distinct {
			day := rec.Time.Format(dayLayout)
			if f.User != "" && rec.User != f.User || f.KeyID != "" && rec.KeyID != f.KeyID || f.Model != "" && rec.Model != f.Model ||
				!f.Since.IsZero() && day < f.Since.Format(dayLayout) || !f.Until.IsZero() && day > f.Until.Format(dayLayout) {
				continue
			}
			if want[rec.Currency] == nil {
				want[rec.Currency] = &Totals{}
			}
			want[rec.Currency].add(&rec)
		}
		rep := report(t, te.Ledger(), f)
		if len(rep.Totals) != len(want) {
			t.Errorf("Test %d: %d currencies in the report, want %d", i, len(rep.Totals), len(want))
		}
		for cur, w := range want {
			got := totalIn(rep, cur)
			if got.Requests != w.Requests || got.Unpriced != w.Unpriced || got.Usage != w.Usage || got.Cost != w.Cost ||
				got.Images != w.Images || fmt.Sprint(got.Sources) != fmt.Sprint(w.Sources) {
				t.Errorf("Test %d: %q totals %+v, want %+v", i, cur, got, *w)
			}
		}
		var rows Totals
		for _, row := range rep.Rows {
			rows.merge(&row.Totals)
		}
		var all Totals
		for _, tot := range rep.Totals {
			all.merge(&tot.Totals)
		}
		if rows.Requests != all.Requests || rows.Usage != all.Usage {
			t.Errorf("Test %d: rows sum to %+v, totals to %+v", i, rows, all)
		}
	}
}
