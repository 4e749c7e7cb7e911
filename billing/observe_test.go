package billing

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// TestLedgerSyncObserverAndLag: the observer hears of each batch commit,
// and Lag is the age of the oldest record the writer has not taken yet.
func TestLedgerSyncObserverAndLag(t *testing.T) {
	l := newLedger(t, openStore(t), 0)
	var syncs atomic.Int64
	l.SetSyncObserver(func(d time.Duration) {
		if d <= 0 {
			t.Errorf("a commit took %v", d)
		}
		syncs.Add(1)
	})
	if lag := l.Lag(); lag != 0 {
		t.Fatalf("lag of an idle ledger = %v, want 0", lag)
	}
	// A commit interval holds the second record in the queue: r1 goes out
	// at once on the idle ledger, and r2, enqueued once r1 is durable,
	// waits for the interval counted from r1's sync. (Waiting for r1 with
	// Flush raced: the flush marker could be served in a batch of its own
	// an interval later, and r2 then went out at once.)
	l.SetCommitInterval(500 * time.Millisecond)
	// Strict mode paces the writer's batches (journaled writes at once).
	l.SetDurability(DurabilityStrict)
	written := make(chan error, 1)
	l.Enqueue(Record{ID: "r1", User: "u", Model: "m"}, func(err error) { written <- err })
	if err := <-written; err != nil {
		t.Fatal(err)
	}
	l.Enqueue(Record{ID: "r2", User: "u", Model: "m"}, nil)
	time.Sleep(20 * time.Millisecond)
	if lag := l.Lag(); lag < 20*time.Millisecond {
		t.Fatalf("lag with a record waiting 20ms = %v", lag)
	}
	if n := syncs.Load(); n < 1 {
		t.Fatalf("%d commits observed, want at least 1", n)
	}
	l.SetSyncObserver(nil)
	if err := l.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if lag := l.Lag(); lag != 0 {
		t.Fatalf("lag after the flush = %v, want 0", lag)
	}
}
