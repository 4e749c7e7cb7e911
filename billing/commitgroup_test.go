package billing

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/caddy-air/caddy-air/store"
)

// gatedLedger is a store.Ledger whose Append waits for the gate once
// armed, and that remembers the IDs of the records whose Append returned
// (what a sync made durable).
type gatedLedger struct {
	store.Ledger
	gate    chan struct{} // Append waits for a value when not nil
	entered chan struct{} // told when an Append starts waiting
	opened  sync.Once     // closes gate: every later Append goes through
	fail    error         // what Append returns, if not nil
	// failIf, if set, is what Append returns for recs, if not nil.
	failIf func(recs []store.Record) error

	mu      sync.Mutex
	durable map[string]bool
	appends int
}

func (g *gatedLedger) Append(ctx context.Context, recs []store.Record) error {
	if g.gate != nil {
		g.entered <- struct{}{}
		<-g.gate
	}
	g.mu.Lock()
	fail := g.fail
	if fail == nil && g.failIf != nil {
		fail = g.failIf(recs)
	}
	g.mu.Unlock()
	if fail != nil {
		return fail
	}
	if err := g.Ledger.Append(ctx, recs); err != nil {
		return err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.appends++
	for _, rec := range recs {
		g.durable[rec.ID] = true
	}
	return nil
}

// open lets every later Append through, if gated.
func (g *gatedLedger) open() {
	if g.gate != nil {
		g.opened.Do(func() { close(g.gate) })
	}
}

// isDurable reports whether id's Append returned.
func (g *gatedLedger) isDurable(id string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.durable[id]
}

// newGatedLedger returns a ledger on a Badger ledger behind a gatedLedger
// whose Append blocks until a value is sent to gate, when gated.
func newGatedLedger(t *testing.T, gated bool) (*Ledger, *gatedLedger) {
	t.Helper()
	inner := newLedger(t, openStore(t), 0) // only for its backend
	bl, _ := backends.Load(inner)
	g := &gatedLedger{Ledger: bl.(store.Ledger), durable: map[string]bool{}}
	if gated {
		g.gate, g.entered = make(chan struct{}), make(chan struct{}, 16)
	}
	l := NewLedger(g, inner.intents, nil)
	t.Cleanup(func() {
		g.open()
		_ = l.Close()
	})
	return l, g
}

// TestLedgerFlushMarkersNotPaced checks that Flush with no record queued
// does not wait for the commit interval: a batch of flush markers alone
// has nothing to sync. Before, the writer paced it like a commit, so a
// report or a config stop right after a sync waited the whole interval
// (here an hour).
func TestLedgerFlushMarkersNotPaced(t *testing.T) {
	l := newLedger(t, openStore(t), 0)
	l.SetCommitInterval(time.Hour)
	durable := make(chan error, 1)
	l.Enqueue(testRecord("r1", 1), func(err error) { durable <- err })
	if err := <-durable; err != nil {
		t.Fatal(err)
	}
	// r1's sync began just now: a batch of records would wait an hour.
	for i := range 3 {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		err := l.Flush(ctx)
		cancel()
		if err != nil {
			t.Fatalf("flush %d with only markers queued, an hour's commit interval after a sync: %v", i, err)
		}
	}
	if got := countRecords(t, l); got != 1 {
		t.Errorf("%d records after the flushes, want 1", got)
	}
	if st := l.Stats(); st.Queued != 0 || st.Batches != 1 {
		t.Errorf("stats %+v, want nothing queued and the one batch of r1", st)
	}
}

// TestLedgerCommitGroupReleasesBatch checks that the records settled while
// the writer is busy share one batch and one commit group: one Append
// commits them all, every waiter is released by it, and none before its
// record's Append returned.
func TestLedgerCommitGroupReleasesBatch(t *testing.T) {
	l, g := newGatedLedger(t, true)
	first := l.enqueueDurable(testRecord("r0", 1))
	<-g.entered // the writer is committing r0 and holds the gate
	const n = 50
	acks := make([]*ack, n)
	for i := range acks {
		acks[i] = l.enqueueDurable(testRecord(fmt.Sprintf("r%02d", i+1), 1))
	}
	for i, a := range acks {
		if a.group.Load() != acks[0].group.Load() {
			t.Fatalf("record %d of the waiting batch got a commit group of its own", i+1)
		}
		if a.group.Load() == first.group.Load() {
			t.Fatal("a record queued after the writer took its batch joined that batch's group")
		}
	}
	g.gate <- struct{}{} // r0 commits
	if err := first.wait(context.Background(), time.Minute); err != nil {
		t.Fatal(err)
	}
	if !g.isDurable("r0") {
		t.Fatal("r0's waiter released before r0's commit returned")
	}
	<-g.entered // the writer took the waiting records as one batch
	select {
	case <-acks[0].group.Load().done:
		t.Fatal("waiters released before their batch committed")
	default:
	}
	g.gate <- struct{}{}
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			id := fmt.Sprintf("r%02d", i+1)
			if err := acks[i].wait(context.Background(), time.Minute); err != nil {
				t.Errorf("%s: %v", id, err)
			}
			if !g.isDurable(id) {
				t.Errorf("%s's waiter released before its batch committed", id)
			}
		})
	}
	wg.Wait()
	if st := l.Stats(); st.Batches != 2 || st.Records != n+1 {
		t.Errorf("stats %+v, want 2 batches of %d records", st, n+1)
	}
	g.mu.Lock()
	appends := g.appends
	g.mu.Unlock()
	if appends != 2 {
		t.Errorf("%d appends, want 2 (r0, then the %d waiting records together)", appends, n)
	}
}

// TestSettleDurableWaitsForGroup checks the engine's side: SettleDurable
// returns once the record is durable, and a second call reports the same.
func TestSettleDurableWaitsForGroup(t *testing.T) {
	te := newTestEngine(t)
	r, aerr := te.Admit(context.Background(), Subject{User: "u", KeyID: "k"}, "claude-x", Usage{Input: 10})
	if aerr != nil {
		t.Fatal(aerr)
	}
	for i := range 2 {
		rec, err := r.SettleDurable(context.Background(), Record{ID: "req-1", Usage: Usage{Input: 10, Output: 5}}, time.Minute)
		if err != nil || rec.ID != "req-1" {
			t.Fatalf("call %d: %+v, %v", i, rec, err)
		}
	}
	te.flush(t)
	if ids := fmt.Sprint(recordIDs(t, te.Ledger(), time.Time{}, time.Time{})); ids != "[req-1]" {
		t.Errorf("records %s, want [req-1]", ids)
	}
}

// TestLedgerCommitGroupSplitBatch checks a commit group too large for one
// batch whose second batch fails: the waiters of the first batch are told
// that their records are durable (they are: a client must get the answer
// its record bills, not an error), those of the second are not released
// by the failure but wait for the retry, which writes their records once
// the storage takes them again.
func TestLedgerCommitGroupSplitBatch(t *testing.T) {
	l, g := newGatedLedger(t, true)
	broken := errors.New("disk gone")
	const n = maxBatch + 10
	last := fmt.Sprintf("q%04d", n-1)
	g.mu.Lock()
	g.failIf = func(recs []store.Record) error {
		if recs[len(recs)-1].ID == last {
			return broken
		}
		return nil
	}
	g.mu.Unlock()
	first := l.enqueueDurable(testRecord("r0", 1))
	<-g.entered // the writer holds r0's batch: the next records queue up
	acks := make([]*ack, n)
	for i := range n {
		acks[i] = l.enqueueDurable(testRecord(fmt.Sprintf("q%04d", i), 1))
		if acks[i].group.Load() != acks[0].group.Load() {
			t.Fatalf("record %d got a commit group of its own", i)
		}
	}
	grp := acks[0].group.Load()
	g.gate <- struct{}{} // r0
	if err := first.wait(context.Background(), time.Minute); err != nil {
		t.Fatal(err)
	}
	<-g.entered
	g.gate <- struct{}{} // the first maxBatch records
	<-g.entered
	g.gate <- struct{}{} // the last 10, which fail
	<-grp.done           // the attempt is over
	for i := range n {
		id := fmt.Sprintf("q%04d", i)
		state := acks[i].state.Load()
		switch {
		case i < maxBatch && state != ackWritten:
			t.Fatalf("%s, durable in the first batch, is in state %d", id, state)
		case i < maxBatch && !g.isDurable(id):
			t.Fatalf("%s was told durable but its batch did not commit", id)
		case i >= maxBatch && state != ackQueued:
			t.Fatalf("%s, in the failed batch, is in state %d, want queued for a retry", id, state)
		case i >= maxBatch && acks[i].group.Load() == grp:
			t.Fatalf("%s, in the failed batch, still waits for the failed attempt", id)
		}
	}
	g.mu.Lock()
	g.failIf = nil
	g.mu.Unlock()
	g.open()
	for i := maxBatch; i < n; i++ {
		if err := acks[i].wait(context.Background(), time.Minute); err != nil {
			t.Fatalf("q%04d: %v after the storage took records again", i, err)
		}
	}
	if !g.isDurable(last) {
		t.Error("the failed batch's records were not written once the storage took records again")
	}
}
