package billing

import (
	"testing"
	"time"
)

// TestLedgerOldestQueued checks the lag a health check reads: the age of
// the oldest record waiting for the writer, zero once none waits.
func TestLedgerOldestQueued(t *testing.T) {
	l := newLedgerIn(t, openStore(t), t.TempDir(), 0)
	// The next sync may begin only a second after the last one began: a
	// record queued right after a sync waits in the queue meanwhile.
	l.SetCommitInterval(time.Second)
	// Strict mode paces the writer's batches (journaled writes at once).
	l.SetDurability(DurabilityStrict)
	first := make(chan error, 1)
	l.Enqueue(testRecord("r1", 1), func(err error) { first <- err })
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	second := make(chan error, 1)
	l.Enqueue(testRecord("r2", 1), func(err error) { second <- err })
	const wait = 100 * time.Millisecond
	time.Sleep(wait)
	st := l.Stats()
	if st.Queued != 1 || st.OldestQueued < wait {
		t.Errorf("while a record waits: queued %d, oldest %s, want 1 and at least %s", st.Queued, st.OldestQueued, wait)
	}
	if err := <-second; err != nil {
		t.Fatal(err)
	}
	if st := l.Stats(); st.Queued != 0 || st.OldestQueued != 0 {
		t.Errorf("once written: queued %d, oldest %s, want 0 and 0", st.Queued, st.OldestQueued)
	}
}
