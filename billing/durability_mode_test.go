package billing

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caddy-air/caddy-air/internal/pgtest"
	"github.com/caddy-air/caddy-air/store"
	"github.com/caddy-air/caddy-air/store/badger"
	"github.com/caddy-air/caddy-air/store/postgres"
)

// syncGated is a Badger ledger whose syncs can be held: Sync (the syncer
// of journaled mode) and Append (strict mode's write and sync) wait for a
// value on gate while it is armed, after telling entered.
type syncGated struct {
	*badger.Ledger
	gate    chan struct{}
	entered chan string
	syncs   atomic.Int64 // syncs that returned
	writes  atomic.Int64 // Writes that returned
	opened  atomic.Bool
	once    sync.Once
}

func (s *syncGated) hold(what string) {
	if !s.opened.Load() {
		s.entered <- what
		<-s.gate
	}
}

// open lets the held sync and every later one through.
func (s *syncGated) open() {
	s.once.Do(func() {
		s.opened.Store(true)
		close(s.gate)
	})
}

func (s *syncGated) Append(ctx context.Context, recs []store.Record) error {
	s.hold("append")
	err := s.Ledger.Append(ctx, recs)
	s.syncs.Add(1)
	return err
}

func (s *syncGated) Sync(ctx context.Context) error {
	s.hold("sync")
	err := s.Ledger.Sync(ctx)
	s.syncs.Add(1)
	return err
}

func (s *syncGated) Write(ctx context.Context, recs []store.Record) error {
	err := s.Ledger.Write(ctx, recs)
	s.writes.Add(1)
	return err
}

// newSyncGated returns a ledger on a syncGated Badger ledger whose syncs
// are held until the test sends on gate.
func newSyncGated(t *testing.T) (*Ledger, *syncGated) {
	t.Helper()
	inner := newLedger(t, openStore(t), 0) // only for its backend
	bl, _ := backends.Load(inner)
	s := &syncGated{Ledger: bl.(*badger.Ledger), gate: make(chan struct{}), entered: make(chan string, 16)}
	l := NewLedger(s, bl.(*badger.Ledger).Intents(), nil)
	t.Cleanup(func() {
		s.open()
		_ = l.Close()
	})
	return l, s
}

// TestJournaledReleasesBeforeSync checks the default Durability: an
// answer's end is released once its record is written, while the sync
// that makes it durable against a machine crash is still running, and
// further records are written and released during that sync (a sync
// never holds up the write path). Flush still means synced and counted:
// it waits for the sync.
func TestJournaledReleasesBeforeSync(t *testing.T) {
	l, s := newSyncGated(t)
	ctx := context.Background()
	if err := l.enqueueDurable(testRecord("r1", 1)).wait(ctx, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if what := <-s.entered; what != "sync" {
		t.Fatalf("the writer called %s, want the syncer's sync", what)
	}
	// The sync of r1 is held. r2 and r3 are written and released anyway.
	for _, id := range []string{"r2", "r3"} {
		if err := l.enqueueDurable(testRecord(id, 1)).wait(ctx, 10*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	if n := s.syncs.Load(); n != 0 {
		t.Fatalf("%d syncs returned before the answers were released, want 0", n)
	}
	if n := s.writes.Load(); n < 2 {
		t.Fatalf("%d writes, want r1's and at least one more during the held sync", n)
	}
	// The health check and the backlog see records that wait for a sync.
	if st := l.Stats(); st.Queued != 2 || st.OldestQueued <= 0 {
		t.Errorf("stats during a held sync: queued %d, oldest %v; want r2 and r3 waiting for the next sync", st.Queued, st.OldestQueued)
	}
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	err := l.Flush(short)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Flush during a held sync returned %v, want it to wait for the sync", err)
	}
	s.open()
	if err := l.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if got := totalIn(report(t, l, ReportFilter{}), "USD"); got.Requests != 3 {
		t.Errorf("%d records counted after Flush, want 3", got.Requests)
	}
}

// TestStrictWaitsForSync checks Durability strict: an answer's end waits
// for the batch's sync (here Append, the write and its fdatasync).
func TestStrictWaitsForSync(t *testing.T) {
	l, s := newSyncGated(t)
	l.SetDurability(DurabilityStrict)
	a := l.enqueueDurable(testRecord("r1", 1))
	if what := <-s.entered; what != "append" {
		t.Fatalf("the writer called %s, want Append (write and sync)", what)
	}
	time.Sleep(50 * time.Millisecond)
	if st := a.state.Load(); st == ackWritten {
		t.Fatal("strict mode released an answer before its record's sync returned")
	}
	s.gate <- struct{}{}
	if err := a.wait(context.Background(), 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if n := s.writes.Load(); n != 0 {
		t.Errorf("%d unsynced writes in strict mode, want 0", n)
	}
}

// TestJournaledNotPaced checks that journaled mode does not pace writes by
// the commit interval (only syncs): with an interval of an hour, records
// settled one after another are each released at once, while strict mode
// would hold the second for the hour.
func TestJournaledNotPaced(t *testing.T) {
	l := newLedger(t, openStore(t), 0)
	l.SetCommitInterval(time.Hour)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, id := range []string{"r1", "r2", "r3"} {
		if err := l.enqueueDurable(testRecord(id, 1)).wait(ctx, time.Minute); err != nil {
			t.Fatalf("%s: %v", id, err)
		}
	}
	// Flush does not wait for the interval either: it syncs at once.
	if err := l.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if got := countRecords(t, l); got != 3 {
		t.Errorf("%d records after Flush, want 3", got)
	}
}

// countingStore counts the calls of each kind that reach a store, to tell
// which path the writer takes.
type countingStore struct {
	store.Ledger
	ds                     store.DeferredSync
	appends, writes, syncs atomic.Int64
}

func (c *countingStore) Append(ctx context.Context, recs []store.Record) error {
	c.appends.Add(1)
	return c.Ledger.Append(ctx, recs)
}

func (c *countingStore) Write(ctx context.Context, recs []store.Record) error {
	c.writes.Add(1)
	return c.ds.Write(ctx, recs)
}

func (c *countingStore) Sync(ctx context.Context) error {
	c.syncs.Add(1)
	return c.ds.Sync(ctx)
}

// TestPostgresDurabilitySwitch checks the two durabilities on PostgreSQL:
// journaled writes records with the asynchronous commit (Write) and syncs
// in the background, strict appends them with a synchronous one, and a
// switch between them (a config reload) takes effect for the next record;
// every record is stored and counted once.
func TestPostgresDurabilitySwitch(t *testing.T) {
	ctx := context.Background()
	db, err := postgres.Open(ctx, postgres.Options{DSN: pgtest.DSN(t), Retention: 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	repos := db.Repos()
	c := &countingStore{Ledger: repos.Ledger, ds: repos.Ledger.(store.DeferredSync)}
	l := NewLedger(c, repos.Intents, nil)
	t.Cleanup(func() { _ = l.Close() })
	settle := func(id string) {
		t.Helper()
		if err := l.enqueueDurable(testRecord(id, 1)).wait(ctx, 10*time.Second); err != nil {
			t.Fatalf("%s: %v", id, err)
		}
	}
	settle("j1")
	if err := l.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if c.writes.Load() != 1 || c.appends.Load() != 0 || c.syncs.Load() < 1 {
		t.Fatalf("journaled: %d writes, %d appends, %d syncs; want 1 write, no append, a sync", c.writes.Load(), c.appends.Load(), c.syncs.Load())
	}
	l.SetDurability(DurabilityStrict)
	settle("s1")
	if c.writes.Load() != 1 || c.appends.Load() != 1 {
		t.Fatalf("strict: %d writes, %d appends; want the record appended", c.writes.Load(), c.appends.Load())
	}
	l.SetDurability(DurabilityJournaled)
	settle("j2")
	if err := l.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if c.writes.Load() != 2 {
		t.Errorf("journaled again: %d writes, want 2", c.writes.Load())
	}
	if got := totalIn(report(t, l, ReportFilter{}), "USD"); got.Requests != 3 {
		t.Errorf("%d records counted, want 3", got.Requests)
	}
}
