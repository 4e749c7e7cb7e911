package billing

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/caddy-air/caddy-air/store"
)

// DefaultRetention is how long ledger records are kept when NewLedger is
// given no retention.
const DefaultRetention = 90 * 24 * time.Hour

// spendMonthTTL keeps a monthly spend counter past the end of its month.
const spendMonthTTL = 93 * 24 * time.Hour

// Ledger is the durable record of settled requests and tasks. Each record
// is written once and expires after the retention. Records of requests
// are appended (Enqueue): their IDs are new by construction. Records whose
// ID may come again, such as a task's, are written idempotently by ID
// (Write). In the same store transaction the ledger adds the record to its
// day × user × key × model × currency aggregate and to the spend counters of
// its user and key, so that these can never disagree with the records.
//
// Appends go through a bounded queue to a single writer goroutine that
// commits them in batches (Enqueue); Write goes straight to the store. A
// Ledger is long-lived: create one per store and Close it to drain it.
type Ledger struct {
	s         store.Store
	retention time.Duration
	log       *zap.Logger

	mu     sync.RWMutex // guards closed, and sends on queue against close
	closed bool
	queue  chan job
	done   chan struct{}
}

// job is a queued record, or a flush marker when flushed is set. It holds
// a pointer so that the queue's buffer stays small.
type job struct {
	rec     *Record
	done    func(err error)
	flushed chan struct{}
}

// Sizes of the asynchronous writer.
const (
	queueSize = 4096
	maxBatch  = 256
	// batchLinger is how long the writer waits for more records before it
	// commits a batch: the most a record can wait in memory.
	batchLinger = 20 * time.Millisecond
)

// NewLedger returns a ledger that keeps records in s for retention (zero
// or negative: DefaultRetention) and starts its writer. log may be nil.
func NewLedger(s store.Store, retention time.Duration, log *zap.Logger) *Ledger {
	if retention <= 0 {
		retention = DefaultRetention
	}
	if log == nil {
		log = zap.NewNop()
	}
	l := &Ledger{
		s:         s,
		retention: retention,
		log:       log,
		queue:     make(chan job, queueSize),
		done:      make(chan struct{}),
	}
	go l.run()
	return l
}

// Write writes rec synchronously and idempotently: it reports whether rec
// was new, and writing a record whose ID an earlier Write wrote changes
// nothing and reports false. rec must be priced already (see Engine).
func (l *Ledger) Write(ctx context.Context, rec Record) (bool, error) {
	if rec.ID == "" {
		return false, errors.New("ledger record without an id")
	}
	rec.fillDefaults(time.Now())
	fresh, err := l.commit(ctx, []*Record{&rec}, true)
	if err != nil {
		return false, err
	}
	return fresh[0], nil
}

// Enqueue queues rec for the writer and returns without waiting for the
// store, unless the queue is full, in which case it blocks until there is
// room: records are never dropped. rec is appended: its ID must be new,
// like a request's random ID, for it is not looked up (see the store
// layout in keys.go for why). done, if not nil, is called from the writer
// once rec is committed or has failed. After Close, Enqueue writes
// synchronously.
func (l *Ledger) Enqueue(rec Record, done func(err error)) {
	rec.fillDefaults(time.Now())
	l.mu.RLock()
	if !l.closed {
		l.queue <- job{rec: &rec, done: done}
		l.mu.RUnlock()
		return
	}
	l.mu.RUnlock()
	_, err := l.commit(context.Background(), []*Record{&rec}, false)
	if err != nil {
		l.log.Error("writing ledger record", zap.String("id", rec.ID), zap.Error(err))
	}
	if done != nil {
		done(err)
	}
}

// Flush waits until every record enqueued before the call is committed, or
// ctx ends.
func (l *Ledger) Flush(ctx context.Context) error {
	ch := make(chan struct{})
	l.mu.RLock()
	if l.closed {
		l.mu.RUnlock()
		<-l.done
		return nil
	}
	l.queue <- job{flushed: ch}
	l.mu.RUnlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close stops accepting queued records, waits until the queue is drained
// into the store and stops the writer. It does not close the store.
func (l *Ledger) Close() error {
	l.mu.Lock()
	if !l.closed {
		l.closed = true
		close(l.queue)
	}
	l.mu.Unlock()
	<-l.done
	return nil
}

// run is the writer: it commits queued records in batches of up to
// maxBatch, one store transaction each, until the queue is closed.
func (l *Ledger) run() {
	defer close(l.done)
	batch := make([]job, 0, maxBatch)
	linger := time.NewTimer(0)
	<-linger.C
	for j := range l.queue {
		batch = append(batch[:0], j)
		// Wait up to batchLinger for more records, so that one store
		// transaction carries many under load; a flush request ends the
		// wait at once.
		linger.Reset(batchLinger)
	drain:
		for len(batch) < maxBatch && batch[len(batch)-1].flushed == nil {
			select {
			case next, ok := <-l.queue:
				if !ok {
					break drain
				}
				batch = append(batch, next)
			case <-linger.C:
				break drain
			}
		}
		if !linger.Stop() {
			select {
			case <-linger.C:
			default:
			}
		}
		l.writeBatch(batch)
	}
}

// writeBatch commits the records of batch, then reports to their callbacks
// and releases the flush markers.
func (l *Ledger) writeBatch(batch []job) {
	recs := make([]*Record, 0, len(batch))
	for i := range batch {
		if batch[i].flushed == nil {
			recs = append(recs, batch[i].rec)
		}
	}
	errs := l.commitSplitting(recs)
	k := 0
	for i := range batch {
		j := &batch[i]
		if j.flushed != nil {
			close(j.flushed)
			continue
		}
		if errs[k] != nil {
			l.log.Error("writing ledger record", zap.String("id", j.rec.ID), zap.String("user", j.rec.User),
				zap.String("key_id", j.rec.KeyID), zap.String("cost", j.rec.Cost.String()), zap.Error(errs[k]))
		}
		if j.done != nil {
			j.done(errs[k])
		}
		k++
	}
}

// commitSplitting appends recs in one transaction; if that fails, it
// halves the batch and tries again, so that one bad record or a batch too
// large for a transaction does not fail the others. It returns each
// record's error.
func (l *Ledger) commitSplitting(recs []*Record) []error {
	errs := make([]error, len(recs))
	if len(recs) == 0 {
		return errs
	}
	_, err := l.commit(context.Background(), recs, false)
	if err == nil {
		return errs
	}
	if len(recs) == 1 {
		errs[0] = err
		return errs
	}
	h := len(recs) / 2
	return append(l.commitSplitting(recs[:h]), l.commitSplitting(recs[h:])...)
}

// commit writes recs, their aggregates and their spend in one transaction
// and reports which were new. If idempotent, it skips records whose ID an
// earlier idempotent commit wrote, and indexes the IDs of the others;
// otherwise every record is new.
func (l *Ledger) commit(ctx context.Context, recs []*Record, idempotent bool) ([]bool, error) {
	var fresh []bool
	err := l.s.Update(ctx, func(txn store.Txn) error {
		fresh = make([]bool, len(recs))
		aggs := map[aggKey]*Totals{}
		spend := map[string]Amount{}
		for i, rec := range recs {
			if idempotent {
				isNew, err := l.index(txn, rec)
				if err != nil {
					return err
				}
				if !isNew {
					continue
				}
			}
			fresh[i] = true
			val, err := encodeRecord(rec)
			if err != nil {
				return err
			}
			if err := txn.Set(recordKey(rec), val, l.retention); err != nil {
				return err
			}
			ak := aggKeyOf(rec)
			t := aggs[ak]
			if t == nil {
				t = &Totals{}
				aggs[ak] = t
			}
			t.add(rec)
			addSpend(spend, rec)
		}
		for ak, t := range aggs {
			if err := mergeAggregate(txn, ak.bytes(), t); err != nil {
				return err
			}
		}
		for key, amt := range spend {
			if err := addSpendCounter(txn, []byte(key), amt); err != nil {
				return err
			}
		}
		return nil
	})
	return fresh, err
}

// index adds rec's ID to the ID index in txn, unless it is there already;
// it reports whether it was new.
func (l *Ledger) index(txn store.Txn, rec *Record) (bool, error) {
	idKey := recordIDKey(rec.ID)
	_, err := txn.Get(idKey)
	if err == nil {
		return false, nil
	}
	if !errors.Is(err, store.ErrNotFound) {
		return false, err
	}
	return true, txn.Set(idKey, indexValue(rec), l.retention)
}

// addSpend adds rec's cost to the spend counters it counts in, by key.
func addSpend(spend map[string]Amount, rec *Record) {
	if !rec.Priced || rec.Cost == 0 {
		return
	}
	month := monthOf(rec.Time)
	for _, sub := range [...]struct {
		scope Scope
		id    string
	}{{ScopeUser, rec.User}, {ScopeKey, rec.KeyID}} {
		if sub.id == "" {
			continue
		}
		spend[string(spendKey(sub.scope, sub.id, rec.Currency, month))] += rec.Cost
		spend[string(spendKey(sub.scope, sub.id, rec.Currency, periodTotal))] += rec.Cost
	}
}

// mergeAggregate adds t to the aggregate stored under key.
func mergeAggregate(txn store.Txn, key []byte, t *Totals) error {
	old, err := txn.Get(key)
	switch {
	case err == nil:
		var cur Totals
		if err := json.Unmarshal(old, &cur); err != nil {
			return fmt.Errorf("decoding aggregate %s: %w", key, err)
		}
		cur.merge(t)
		t = &cur
	case !errors.Is(err, store.ErrNotFound):
		return err
	}
	val, err := json.Marshal(t)
	if err != nil {
		return err
	}
	return txn.Set(key, val, 0)
}

// addSpendCounter adds amt to the spend counter stored under key.
func addSpendCounter(txn store.Txn, key []byte, amt Amount) error {
	old, err := txn.Get(key)
	switch {
	case err == nil:
		n, err := strconv.ParseInt(string(old), 10, 64)
		if err != nil {
			return fmt.Errorf("decoding spend counter %s: %w", key, err)
		}
		amt += Amount(n)
	case !errors.Is(err, store.ErrNotFound):
		return err
	}
	var ttl time.Duration
	if !isTotalKey(key) {
		ttl = spendMonthTTL
	}
	return txn.Set(key, strconv.AppendInt(nil, int64(amt), 10), ttl)
}

// isTotalKey reports whether a spend key is of the all-time period.
func isTotalKey(key []byte) bool {
	n := len(periodTotal)
	return len(key) >= n && string(key[len(key)-n:]) == periodTotal
}

// Get returns the record with id that Write wrote, or store.ErrNotFound.
// Appended records (Enqueue) have no ID index; find them with Records.
func (l *Ledger) Get(ctx context.Context, id string) (Record, error) {
	idx, err := l.s.Get(ctx, recordIDKey(id))
	if err != nil {
		return Record{}, err
	}
	for _, key := range recordKeysFromIndex(id, idx) {
		val, err := l.s.Get(ctx, key)
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return Record{}, err
		}
		return decodeRecord(key, val)
	}
	return Record{}, store.ErrNotFound
}

// Records calls fn for every record with since <= Time < until, oldest
// first. A zero since or until is unbounded. fn may return store.ErrStop.
// Records written by earlier versions come first: they are older than
// every record under the current prefix.
func (l *Ledger) Records(ctx context.Context, since, until time.Time, fn func(Record) error) error {
	stopped := false
	stopAware := func(rec Record) error {
		err := fn(rec)
		if errors.Is(err, store.ErrStop) {
			stopped = true
		}
		return err
	}
	if err := l.recordsIn(ctx, prefixLegacyRecords, since, until, stopAware); err != nil || stopped {
		return err
	}
	return l.recordsIn(ctx, prefixRecords, since, until, fn)
}

// recordsIn calls fn for every record under prefix with since <= Time <
// until, oldest first, seeking straight to since.
func (l *Ledger) recordsIn(ctx context.Context, prefix string, since, until time.Time, fn func(Record) error) error {
	var from []byte
	if !since.IsZero() {
		from = []byte(prefix + since.UTC().Format(recordTimeLayout))
	}
	var to string
	if !until.IsZero() {
		to = prefix + until.UTC().Format(recordTimeLayout)
	}
	return l.s.Scan(ctx, []byte(prefix), store.ScanOptions{Start: from}, func(k, v []byte) error {
		if to != "" && string(k) >= to {
			return store.ErrStop
		}
		rec, err := decodeRecord(k, v)
		if err != nil {
			return fmt.Errorf("decoding ledger record %s: %w", k, err)
		}
		return fn(rec)
	})
}
