package billing

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"sync"
	"testing"
	"time"

	"github.com/caddy-air/caddy-air/store"
)

var day0 = time.Date(2025, 3, 10, 12, 0, 0, 0, time.UTC)

func testRecord(id string, cost Amount) Record {
	return Record{
		ID: id, Time: day0, Endpoint: EndpointChat, User: "alice", KeyID: "key_1", Model: "claude-x",
		Usage: Usage{Input: 100, Output: 10}, Source: SourceReported, Status: 200, Outcome: OutcomeOK,
		Priced: true, Currency: "USD", Cost: cost,
	}
}

func TestLedgerIdempotent(t *testing.T) {
	ctx := context.Background()
	l := newLedger(t, openStore(t), 0)

	// Synchronous path: the second write of the same ID is a no-op.
	for i, want := range []bool{true, false} {
		fresh, err := l.Write(ctx, testRecord("sync-1", 1000))
		if err != nil || fresh != want {
			t.Fatalf("Test %d: Write = %v, %v; want %v", i, fresh, err, want)
		}
	}

	// Asynchronous path, including a duplicate of a synchronous write and a
	// duplicate within one batch.
	var mu sync.Mutex
	got := map[string][]bool{}
	done := func(id string) func(bool, error) {
		return func(fresh bool, err error) {
			if err != nil {
				t.Errorf("write %s: %v", id, err)
			}
			mu.Lock()
			got[id] = append(got[id], fresh)
			mu.Unlock()
		}
	}
	l.Enqueue(testRecord("async-1", 2000), done("async-1"))
	l.Enqueue(testRecord("async-1", 2000), done("async-1"))
	l.Enqueue(testRecord("sync-1", 1000), done("sync-1"))
	if err := l.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	l.Enqueue(testRecord("async-1", 2000), done("async-1"))
	if err := l.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got["async-1"]) != "[true false false]" || fmt.Sprint(got["sync-1"]) != "[false]" {
		t.Errorf("reported freshness %v", got)
	}
	if fresh, err := l.Write(ctx, testRecord("async-1", 2000)); err != nil || fresh {
		t.Errorf("sync write of an async record: %v, %v", fresh, err)
	}

	if n := countRecords(t, l); n != 2 {
		t.Errorf("%d records, want 2", n)
	}
	tot := totalIn(report(t, l, ReportFilter{}), "USD")
	if tot.Requests != 2 || tot.Cost != 3000 || tot.Usage.Input != 200 {
		t.Errorf("aggregate counted duplicates: %+v", tot)
	}
	rec, err := l.Get(ctx, "async-1")
	if err != nil || rec.Cost != 2000 || rec.User != "alice" || !rec.Time.Equal(day0) {
		t.Errorf("Get = %+v, %v", rec, err)
	}
	if _, err := l.Get(ctx, "missing"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Get(missing) error %v", err)
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
	l := NewLedger(s, 0, nil)
	const n = 3 * maxBatch
	var acked sync.WaitGroup
	acked.Add(n)
	for i := range n {
		l.Enqueue(testRecord(fmt.Sprintf("r%d", i), 1), func(bool, error) { acked.Done() })
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	acked.Wait()
	// Enqueue after Close still writes, synchronously.
	fresh := make(chan bool, 1)
	l.Enqueue(testRecord("late", 1), func(f bool, err error) { fresh <- f && err == nil })
	if !<-fresh {
		t.Error("record enqueued after Close was not written")
	}
	l2 := newLedger(t, s, 0)
	if got := countRecords(t, l2); got != n+1 {
		t.Errorf("%d records after Close, want %d", got, n+1)
	}
	if tot := totalIn(report(t, l2, ReportFilter{}), "USD"); tot.Requests != n+1 || tot.Cost != n+1 {
		t.Errorf("aggregate after Close: %+v", tot)
	}
}

// TestAggregatesEqualRecords writes random usage streams, with duplicates,
// through the engine and the real ledger on Badger, and checks that every
// report equals the sum of the distinct records it covers, exactly.
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
	var ids []string
	for i := range 400 {
		var rec Record
		if len(ids) > 0 && r.Intn(10) == 0 {
			// Resend an earlier record: it must not count twice.
			rec = distinct[ids[r.Intn(len(ids))]]
		} else {
			rec = Record{
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
		}
		switch r.Intn(3) {
		case 0:
			res, aerr := te.Admit(context.Background(), Subject{rec.User, rec.KeyID}, rec.Model, Usage{})
			if aerr != nil {
				t.Fatal(aerr)
			}
			rec = res.Settle(rec)
		case 1:
			var err error
			if rec, _, err = te.Charge(context.Background(), rec); err != nil {
				t.Fatal(err)
			}
		default:
			rec = te.price(rec)
			te.Ledger().Enqueue(rec, nil)
		}
		if _, ok := distinct[rec.ID]; !ok {
			distinct[rec.ID] = rec
			ids = append(ids, rec.ID)
		}
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
