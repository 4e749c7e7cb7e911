package billing

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/caddy-air/caddy-air/store"
)

// copyDir copies the files of dir, recursively, into a new directory: what
// a kill -9 at that instant would leave on disk.
func copyDir(t *testing.T, dir string) string {
	t.Helper()
	dst := t.TempDir()
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o700)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o600)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// TestLedgerDoneMeansDurable checks that Enqueue's done reports a record
// only once it is in the journal on disk: a copy of the journal taken in
// done, as a kill at that instant would leave it, holds the record, and a
// ledger opened on it counts it.
func TestLedgerDoneMeansDurable(t *testing.T) {
	s := openStore(t)
	dir := t.TempDir()
	l := newLedgerIn(t, s, dir, 0)
	const n = 50
	copies := make(chan string, n)
	for i := range n {
		l.Enqueue(testRecord(fmt.Sprintf("r%02d", i), 1), func(err error) {
			if err != nil {
				t.Error(err)
			}
			copies <- copyDir(t, dir)
		})
	}
	// The last record's copy holds every record; an early one its own.
	var last string
	for range n {
		last = <-copies
	}
	l2 := newLedgerIn(t, openStore(t), last, 0)
	if got := countRecords(t, l2); got != n {
		t.Errorf("%d records in the journal as it was when the last was reported durable, want %d", got, n)
	}
	if tot := totalIn(report(t, l2, ReportFilter{}), "USD"); tot.Requests != n {
		t.Errorf("a ledger on that journal counts %+v", tot)
	}
	if st := l.Stats(); st.Records != n || st.Batches < 1 || st.Batches > n || st.Broken != "" {
		t.Errorf("stats %+v", st)
	}
}

// TestLedgerSettlesInterrupted checks that the intents of requests a
// stopped gateway did not settle are recorded at the next start, once,
// with outcome interrupted, and that a settled request is not recorded
// twice.
func TestLedgerSettlesInterrupted(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	dir := t.TempDir()
	l := newLedgerIn(t, s, dir, 0)
	for _, id := range []string{"lost-1", "settled", "lost-2", "abandoned"} {
		rec := testRecord(id, 0)
		rec.Outcome, rec.Source = OutcomeInterrupted, SourceEstimated
		if err := l.Intend(rec); err != nil {
			t.Fatal(err)
		}
	}
	l.Enqueue(testRecord("settled", 5), nil)
	l.Abandon("abandoned")
	if err := l.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	closeLedger(l) // as if killed: lost-1 and lost-2 had reached an upstream

	price := func(rec Record) Record {
		rec.Priced, rec.Currency, rec.Cost = true, "USD", 999 // the engine's rule zeroes it; here the ledger keeps it
		return rec
	}
	for round := range 3 {
		l = newLedgerIn(t, s, dir, 0)
		n, err := l.SettleInterrupted(ctx, price)
		if want := map[int]int{0: 2}[round]; err != nil || n != want {
			t.Fatalf("round %d: SettleInterrupted = %d, %v; want %d", round, n, err, want)
		}
		if n2, _ := l.SettleInterrupted(ctx, price); n2 != 0 {
			t.Errorf("round %d: a second SettleInterrupted wrote %d", round, n2)
		}
		if ids := fmt.Sprint(recordIDs(t, l, time.Time{}, time.Time{})); ids != "[settled lost-1 lost-2]" {
			t.Errorf("round %d: records %s", round, ids)
		}
		var outcomes []string
		_ = l.Records(ctx, time.Time{}, time.Time{}, func(r Record) error {
			outcomes = append(outcomes, r.Outcome+"/"+string(r.Source))
			return nil
		})
		if got := fmt.Sprint(outcomes); got != "[ok/reported interrupted/estimated interrupted/estimated]" {
			t.Errorf("round %d: outcomes %s", round, got)
		}
		closeLedger(l)
	}
}

// TestQuoteUnbilledOutcomes checks that a timeout, an interruption or an
// unfinished background response is recorded with its tier and currency
// but no cost.
func TestQuoteUnbilledOutcomes(t *testing.T) {
	pt := mustPrices(t, testPrices)
	for _, tc := range []struct {
		outcome string
		free    bool
	}{{OutcomeOK, false}, {OutcomeCanceled, false}, {OutcomeTimeout, true}, {OutcomeInterrupted, true}, {OutcomeUnavailable, true}, {OutcomeUnfinished, true}} {
		rec := Record{Model: "qwen3-max", Usage: Usage{Input: 1000, Output: 100}, Outcome: tc.outcome}
		q := pt.QuoteRecord(&rec)
		if !q.Priced || (q.Cost == 0) != tc.free {
			t.Errorf("%s: quote %+v, want free=%v", tc.outcome, q, tc.free)
		}
	}
}

// TestLedgerGetChecksID checks that an index entry whose journal position
// now holds another record, as after a journal lost its tail in a crash of
// the machine, finds nothing rather than the wrong record.
func TestLedgerGetChecksID(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	dir := t.TempDir()
	l := newLedgerIn(t, s, dir, 0)
	if _, err := l.Write(ctx, testRecord("task-1", 1)); err != nil {
		t.Fatal(err)
	}
	closeLedger(l)
	// The machine lost the journal's last page: the segment is empty again.
	segs, _ := filepath.Glob(filepath.Join(dir, "*.seg"))
	if len(segs) != 1 || os.Truncate(segs[0], 0) != nil {
		t.Fatalf("segments %v", segs)
	}
	l = newLedgerIn(t, s, dir, 0)
	if _, err := l.Write(ctx, testRecord("task-2", 2)); err != nil {
		t.Fatal(err)
	}
	if rec, err := l.Get(ctx, "task-1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Get(task-1) = %s, %v; want not found", rec.ID, err)
	}
	if rec, err := l.Get(ctx, "task-2"); err != nil || rec.ID != "task-2" {
		t.Errorf("Get(task-2) = %s, %v", rec.ID, err)
	}
}

// TestLedgerCountsUnderSteadyLoad checks that the store counts records
// while they keep coming: a writer that never finds its queue empty must
// still count what it synced, or reports would lag and memory grow.
func TestLedgerCountsUnderSteadyLoad(t *testing.T) {
	l := newLedger(t, openStore(t), 0)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			l.Enqueue(testRecord(fmt.Sprintf("r%d", i), 1), nil)
			time.Sleep(50 * time.Microsecond)
		}
	}()
	defer func() { close(stop); <-done }()
	deadline := time.Now().Add(10 * time.Second)
	for totalIn(report(t, l, ReportFilter{}), "USD").Requests == 0 {
		if time.Now().After(deadline) {
			t.Fatal("nothing counted after 10 s of steady load")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
