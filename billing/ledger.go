package billing

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/caddy-air/caddy-air/store"
)

// DefaultRetention is how long ledger records are kept when the backend is
// given no retention.
const DefaultRetention = 90 * 24 * time.Hour

// Ledger is the durable record of settled requests and tasks. Each record
// is written once and kept for the backend's retention. Records of
// requests are appended (Enqueue): their IDs are new by construction.
// Records whose ID may come again, such as a task's, are inserted
// idempotently by ID (Write).
//
// Durability is group commit: a single writer goroutine hands every record
// queued since its last batch to the backend in one call; then it reports
// them written: all the waiters of the batch at once, by closing its
// commit group (Reservation.SettleDurable, whose caller holds a client's
// last byte until then), and Enqueue's done of each record. What
// "written" means is the ledger's Durability: in strict mode the call is
// store.Ledger.Append, which makes the batch durable against a crash of
// the machine (one journal sync on Badger, one synchronous transaction on
// a database); in journaled mode (the default) it is
// store.DeferredSync.Write, durable against a kill of the process, and a
// syncer goroutine (syncer.go) syncs in the background. The backend
// counts the records in its aggregates and spend (store.Ledger says how);
// Flush waits until they are synced and counted in either mode.
//
// Before a request reaches an upstream its intent is recorded (Intend);
// the writer resolves it once the request's record is durable, and a
// restart records the intents left unresolved (SettleInterrupted).
//
// A Ledger is long-lived: create one per backend and Close it to drain it
// before the backend is closed.
type Ledger struct {
	repo store.Ledger
	// deferred is repo as a store.DeferredSync, nil if it is not one: then
	// every Durability is strict.
	deferred store.DeferredSync
	intents  store.Intents
	log      *zap.Logger
	// commitInterval is the least time between two syncs (see
	// DefaultCommitInterval), lastSync when the last began and lastBatch
	// when the writer's last batch began (unix nanoseconds).
	commitInterval, lastSync, lastBatch atomic.Int64
	// durability is the Durability of the records written from now on.
	durability atomic.Int32
	// retryGroup is the commit group of the records in the writer's
	// retry list (their next attempt); only the writer uses it.
	retryGroup *commitGroup
	// sync is the syncer of Durability journaled (syncer.go).
	sync syncer

	mu     sync.Mutex // guards closed, queue, records and group
	closed bool
	queue  []job
	// records is the number of records in queue (the rest are flush
	// markers): a batch of markers alone is not paced.
	records int
	// group is the commit group of the records in queue that wait to be
	// durable (enqueueDurable); nil until one does.
	group *commitGroup
	wake  chan struct{} // has a value when queue may not be empty
	done  chan struct{}

	stats ledgerStats
}

// job is a queued record, or a flush marker when flushed is set.
type job struct {
	rec  *Record
	done func(err error)
	// ack is the state of a record whose settler waits for it
	// (enqueueDurable), nil for others.
	ack     *ack
	flushed chan struct{}
	// queued is when rec was enqueued (see Lag).
	queued time.Time
}

// Sizes of the writer.
const (
	// maxBatch bounds the records of one batch.
	maxBatch = 1024
	// MaxQueued is the number of records waiting for the writer beyond
	// which Backlogged reports the ledger as backlogged and new billable
	// work is refused: the storage is not keeping up.
	MaxQueued = 1 << 16
)

// NewLedger returns the ledger that writes to repo and keeps the intents
// of requests in flight in intents, and starts its writer. log may be nil.
// The intents that a stopped instance left are recorded by
// SettleInterrupted.
func NewLedger(repo store.Ledger, intents store.Intents, log *zap.Logger) *Ledger {
	if log == nil {
		log = zap.NewNop()
	}
	l := &Ledger{
		repo:    repo,
		intents: intents,
		log:     log,
		wake:    make(chan struct{}, 1),
		done:    make(chan struct{}),
	}
	l.deferred, _ = repo.(store.DeferredSync)
	l.commitInterval.Store(int64(DefaultCommitInterval))
	l.sync.init()
	go l.runSyncer()
	go l.run()
	return l
}

// Write writes rec synchronously, durably and idempotently: it reports
// whether rec was new, and writing a record whose ID an earlier Write
// wrote changes nothing and reports false. rec must be priced already (see
// Engine).
func (l *Ledger) Write(ctx context.Context, rec Record) (bool, error) {
	if rec.ID == "" {
		return false, errors.New("ledger record without an id")
	}
	rec.fillDefaults(time.Now())
	return l.repo.Insert(ctx, rec.toStore())
}

// Enqueue queues rec for the writer and returns at once; it never blocks
// and never drops a record. rec is appended: its ID must be new, like a
// request's random ID. done, if not nil, is called from the writer once
// rec is written as the Durability says (in the journal, or synced), or
// with the error that kept it from being so; a record
// whose write failed stays queued and is written with a later batch,
// without a second call of done. After Close, Enqueue writes rec at once,
// and a failure is logged with the record's user, key and cost.
func (l *Ledger) Enqueue(rec Record, done func(err error)) {
	now := time.Now()
	rec.fillDefaults(now)
	l.mu.Lock()
	if !l.closed {
		l.queue = append(l.queue, job{rec: &rec, done: done, queued: now})
		l.records++
		l.mu.Unlock()
		l.signal()
		return
	}
	l.mu.Unlock()
	err := l.writeNow(&rec)
	if done != nil {
		done(err)
	}
}

// enqueueDurable is Enqueue for a caller that waits for rec to be
// written (durable as the ledger's Durability says): it returns rec's
// ack, whose wait reports when it is. The records queued between two
// batches share the batch's commit group, so the writer wakes all their
// waiters with one close. A record whose write failed stays queued as
// with Enqueue, and its waiter waits for the next try.
func (l *Ledger) enqueueDurable(rec Record) *ack {
	now := time.Now()
	rec.fillDefaults(now)
	l.mu.Lock()
	if !l.closed {
		if l.group == nil {
			l.group = newCommitGroup()
		}
		a := newAck(l.group)
		l.queue = append(l.queue, job{rec: &rec, ack: a, queued: now})
		l.records++
		l.mu.Unlock()
		l.signal()
		return a
	}
	l.mu.Unlock()
	a := newAck(nil)
	if l.writeNow(&rec) == nil {
		a.state.Store(ackWritten)
	} else {
		a.state.Store(ackWithheld)
	}
	return a
}

// writeNow writes rec at once, for a closed ledger, and logs a failure.
func (l *Ledger) writeNow(rec *Record) error {
	err := l.appendBatch([]*Record{rec})
	if err != nil {
		l.logFailed(rec, err)
	}
	return err
}

// signal wakes the writer.
func (l *Ledger) signal() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// Queued is the number of records waiting for the writer, or, written in
// journaled mode, for their sync.
func (l *Ledger) Queued() int {
	unsynced, _ := l.sync.unsynced()
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.records + unsynced
}

// Backlogged reports why new billable work should wait: more than
// MaxQueued records wait for the writer, or the backend stopped accepting
// records. Nil when the ledger keeps up.
func (l *Ledger) Backlogged() error {
	if n := l.Queued(); n > MaxQueued {
		return fmt.Errorf("%d ledger records wait for the storage", n)
	}
	return l.repo.Err()
}

// Flush waits until every record enqueued before the call is durable and
// counted in the aggregates (or its write has failed, and it waits to be
// tried again), or ctx ends.
func (l *Ledger) Flush(ctx context.Context) error {
	ch := make(chan struct{})
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		select {
		case <-l.done:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	l.queue = append(l.queue, job{flushed: ch})
	l.mu.Unlock()
	l.signal()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// closeTimeout bounds how long Close waits for the writer to drain the
// queue: a storage that hangs must not hang the process's exit.
const closeTimeout = 30 * time.Second

// Close stops accepting queued records and waits, at most closeTimeout,
// until the queue is drained into the backend. It does not close the
// backend. Records enqueued after Close are written at once. Records still
// queued when the time is up are logged and reported in the error.
func (l *Ledger) Close() error {
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
	l.signal()
	select {
	case <-l.done:
		return nil
	case <-time.After(closeTimeout):
		n := l.Queued()
		l.log.Error("ledger: the storage did not take the queued records in time; they are lost", zap.Int("records", n))
		return fmt.Errorf("ledger: %d queued records were not written within %s", n, closeTimeout)
	}
}

// logFailed logs a record that could not be written, with what an operator
// needs to bill it by hand.
func (l *Ledger) logFailed(rec *Record, err error) {
	l.log.Error("writing ledger record", zap.String("id", rec.ID), zap.String("user", rec.User),
		zap.String("key_id", rec.KeyID), zap.String("model", rec.Model), zap.String("cost", rec.Cost.String()),
		zap.String("currency", rec.Currency), zap.Error(err))
}

// Get returns the record with id that Write wrote, or store.ErrNotFound.
// Appended records (Enqueue) need not be found; find them with Records.
func (l *Ledger) Get(ctx context.Context, id string) (Record, error) {
	rec, err := l.repo.Get(ctx, id)
	if err != nil {
		return Record{}, err
	}
	return recordFromStore(&rec), nil
}

// Records calls fn for every record with since <= Time < until that is
// within the retention, in the order they were written. A zero since or
// until is unbounded. fn may return store.ErrStop. Records enqueued but
// not yet written are not included; Flush first to include them.
func (l *Ledger) Records(ctx context.Context, since, until time.Time, fn func(Record) error) error {
	return l.repo.Records(ctx, since, until, func(rec store.Record) error {
		return fn(recordFromStore(&rec))
	})
}

// OutcomeInterrupted is the outcome of a request that had reached an
// upstream when the gateway stopped (a crash, kill -9) before it could
// settle it: the restart records it from its intent, with usage estimated
// from the request and no cost (see SettleInterrupted).
const OutcomeInterrupted = "interrupted"

// Intend records, before a request reaches an upstream, the record it
// leaves if the gateway dies before settling it: rec, with outcome
// interrupted. Settling a record with the same ID, or Abandon, resolves
// the intent.
func (l *Ledger) Intend(rec Record) error {
	rec.fillDefaults(time.Now())
	return l.intents.Add(rec.toStore())
}

// Abandon resolves the intent of a request that never reached an upstream
// and leaves no record.
func (l *Ledger) Abandon(id string) { l.intents.Abandon(id) }

// SettleInterrupted records the intents that a stopped gateway left and
// that have no record: requests that had reached an upstream when it
// stopped. Each is written with outcome interrupted and usage source
// estimated, priced by price; an intent whose request was settled before
// the stop is not recorded again. It runs once per ledger and reports how
// many records it wrote.
func (l *Ledger) SettleInterrupted(ctx context.Context, price func(Record) Record) (int, error) {
	left, err := l.intents.Interrupted(ctx)
	if err != nil || len(left) == 0 {
		return 0, err
	}
	recs := make([]store.Record, len(left))
	ids := make([]string, len(left))
	for i := range left {
		rec := recordFromStore(&left[i])
		rec.Outcome, rec.Source = OutcomeInterrupted, SourceEstimated
		priced := price(rec)
		recs[i], ids[i] = priced.toStore(), rec.ID
	}
	if err := l.repo.Append(ctx, recs); err != nil {
		return 0, err
	}
	if err := l.repo.Flush(ctx); err != nil {
		l.log.Error("counting interrupted requests", zap.Error(err))
	}
	l.intents.Resolve(ids)
	l.log.Warn("recorded requests interrupted by the last stop", zap.Int("records", len(recs)))
	return len(recs), nil
}
