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
	"github.com/caddy-air/caddy-air/store/journal"
)

// DefaultRetention is how long ledger records are kept when NewLedger is
// given no retention.
const DefaultRetention = 90 * 24 * time.Hour

// spendMonthTTL keeps a monthly spend counter past the end of its month.
const spendMonthTTL = 93 * 24 * time.Hour

// expiryInterval is how often the writer deletes journal segments past
// the retention.
const expiryInterval = time.Hour

// Ledger is the durable record of settled requests and tasks. Each record
// is written once and kept for the retention. Records of requests are
// appended (Enqueue): their IDs are new by construction. Records whose ID
// may come again, such as a task's, are written idempotently by ID (Write).
//
// Records go to an append-only journal (package store/journal says why);
// the store keeps what must be looked up: each record's contribution to
// its day × user × key × model × currency aggregate and to the spend
// counters of its user and key, the ID index of Write, and the journal
// position up to which it counts records. Those are updated in one store transaction per batch of
// records, after the batch is appended to the journal; if the transaction
// fails, the batch is cut off the journal again, and records the store did
// not count when the gateway stopped are counted when it starts. So the
// aggregates and spend can never disagree with the records.
//
// Appends go through a bounded queue to a single writer goroutine that
// commits them in batches (Enqueue); Write commits at once. A Ledger is
// long-lived: create one per store and Close it to drain it.
type Ledger struct {
	s         store.Store
	j         *journal.Journal
	retention time.Duration
	log       *zap.Logger

	// commitMu serializes commits: appending to the journal and counting
	// in the store must happen in the same order.
	commitMu   sync.Mutex
	broken     error     // why commits are refused, if the journal and the store may disagree
	jclosed    bool      // the journal is closed
	lastExpiry time.Time // when old segments were last deleted

	countedMu sync.RWMutex
	counted   journal.Pos // where the records the store counts end; readers see no further

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
	// commits a batch: the most a record can wait in memory. At 500
	// requests/s a batch holds about 25 records, and the queue fills
	// during a linger only above 80,000 records/s.
	batchLinger = 50 * time.Millisecond
)

// NewLedger opens the ledger whose journal is in dir (created if missing)
// and whose aggregates, spend and index are in s. It keeps records for
// retention (zero or negative: DefaultRetention), counts in s the records
// that s did not count yet, and starts the writer. log may be nil.
func NewLedger(s store.Store, dir string, retention time.Duration, log *zap.Logger) (*Ledger, error) {
	if retention <= 0 {
		retention = DefaultRetention
	}
	if log == nil {
		log = zap.NewNop()
	}
	j, err := journal.Open(journal.Options{Dir: dir})
	if err != nil {
		return nil, err
	}
	l := &Ledger{
		s:         s,
		j:         j,
		retention: retention,
		log:       log,
		queue:     make(chan job, queueSize),
		done:      make(chan struct{}),
	}
	if err := l.recover(context.Background()); err != nil {
		_ = j.Close()
		return nil, fmt.Errorf("ledger: %w", err)
	}
	l.expire(time.Now())
	go l.run()
	return l, nil
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
// like a request's random ID, for it is not looked up (an ID index entry
// per request would cost a store write per request). done, if not nil, is
// called from the writer once rec is committed or has failed. After Close, Enqueue fails at once:
// the error is logged with the record's user, key and cost.
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
		l.logFailed(&rec, err)
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
// into the journal and the store, stops the writer and closes the journal.
// It does not close the store. Records enqueued after Close fail and are
// logged.
func (l *Ledger) Close() error {
	l.mu.Lock()
	if !l.closed {
		l.closed = true
		close(l.queue)
	}
	l.mu.Unlock()
	<-l.done
	l.commitMu.Lock()
	defer l.commitMu.Unlock()
	if l.jclosed {
		return nil
	}
	l.jclosed = true
	return l.j.Close()
}

// run is the writer: it commits queued records in batches of up to
// maxBatch, one commit each, until the queue is closed.
//
// Once a record arrives it sleeps batchLinger, then takes what is queued:
// records enqueued meanwhile wait in the channel's buffer and wake no one.
// Receiving each as it came, as it did before, cost a goroutine wake-up
// (futex calls, a spinning thread) per request. A flush marker that
// arrives first is served at once.
func (l *Ledger) run() {
	defer close(l.done)
	batch := make([]job, 0, maxBatch)
	linger := time.NewTimer(batchLinger)
	linger.Stop()
	for {
		j, ok := <-l.queue
		if !ok {
			return
		}
		if j.flushed == nil {
			linger.Reset(batchLinger)
			<-linger.C
		}
		batch = append(batch[:0], j)
		for {
			closed := false
		drain:
			for len(batch) < maxBatch {
				select {
				case next, ok := <-l.queue:
					if !ok {
						closed = true
						break drain
					}
					batch = append(batch, next)
				default:
					break drain
				}
			}
			full := len(batch) == maxBatch
			l.writeBatch(batch)
			batch = batch[:0]
			if closed {
				return
			}
			if !full {
				break
			}
		}
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
			l.logFailed(j.rec, errs[k])
		}
		if j.done != nil {
			j.done(errs[k])
		}
		k++
	}
}

// logFailed logs a record that could not be written, with what an operator
// needs to bill it by hand.
func (l *Ledger) logFailed(rec *Record, err error) {
	l.log.Error("writing ledger record", zap.String("id", rec.ID), zap.String("user", rec.User),
		zap.String("key_id", rec.KeyID), zap.String("model", rec.Model), zap.String("cost", rec.Cost.String()),
		zap.String("currency", rec.Currency), zap.Error(err))
}

// commitSplitting appends recs in one commit; if that fails, it
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

// commit appends recs to the journal and counts them in the store, and
// reports which were new. If idempotent, it skips records whose ID an
// earlier idempotent commit wrote, or that came earlier in recs, and
// indexes the IDs of the others; otherwise every record is new.
func (l *Ledger) commit(ctx context.Context, recs []*Record, idempotent bool) ([]bool, error) {
	l.commitMu.Lock()
	defer l.commitMu.Unlock()
	switch {
	case l.jclosed:
		return nil, errors.New("ledger closed")
	case l.broken != nil:
		return nil, l.broken
	}
	fresh := make([]bool, len(recs))
	add := recs
	if idempotent {
		var err error
		if add, err = l.unwritten(ctx, recs, fresh); err != nil {
			return nil, err
		}
	} else {
		for i := range fresh {
			fresh[i] = true
		}
	}
	if len(add) == 0 {
		return fresh, nil
	}
	now := time.Now()
	entries := make([][]byte, len(add))
	for i, rec := range add {
		var err error
		if entries[i], err = encodeEntry(rec, idempotent, now); err != nil {
			return nil, fmt.Errorf("encoding record %s: %w", rec.ID, err)
		}
	}
	start := l.j.End()
	pos, end, err := l.j.Append(entries)
	if err != nil {
		return nil, err
	}
	var indexAt []journal.Pos
	if idempotent {
		indexAt = pos
	}
	err = l.s.Update(ctx, func(txn store.Txn) error { return l.count(txn, add, indexAt, end) })
	if err != nil {
		if terr := l.j.Truncate(start); terr != nil {
			// The journal holds records the store does not count; the next
			// start counts them. Until then, refuse to write more.
			l.broken = fmt.Errorf("ledger stopped: the journal could not be cut back after a failed commit: %w", terr)
			l.log.Error("ledger stopped", zap.Error(l.broken))
		}
		return nil, err
	}
	l.setCounted(end)
	if now.Sub(l.lastExpiry) >= expiryInterval {
		l.expire(now)
	}
	return fresh, nil
}

// unwritten returns the records of recs whose IDs are neither in the ID
// index nor earlier in recs, and marks them in fresh.
func (l *Ledger) unwritten(ctx context.Context, recs []*Record, fresh []bool) ([]*Record, error) {
	var add []*Record
	seen := map[string]bool{}
	for i, rec := range recs {
		if seen[rec.ID] {
			continue
		}
		// Only commits, which hold commitMu, write index entries: no other
		// one can come between this read and the commit.
		_, err := l.s.Get(ctx, recordIDKey(rec.ID))
		if err == nil {
			continue
		}
		if !errors.Is(err, store.ErrNotFound) {
			return nil, err
		}
		seen[rec.ID] = true
		fresh[i] = true
		add = append(add, rec)
	}
	return add, nil
}

// count adds recs to their aggregates and spend counters in txn, indexes
// the ID of recs[i] at indexAt[i] if indexAt is not nil and that position
// not zero, and records that the store counts the journal up to end.
func (l *Ledger) count(txn store.Txn, recs []*Record, indexAt []journal.Pos, end journal.Pos) error {
	aggs := map[aggKey]*Totals{}
	spend := map[string]Amount{}
	for i, rec := range recs {
		if indexAt != nil && !indexAt[i].IsZero() {
			if err := txn.Set(recordIDKey(rec.ID), indexValue(indexAt[i]), l.retention); err != nil {
				return err
			}
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
	b, _ := end.AppendBinary(nil)
	return txn.Set([]byte(keyJournalCount), b, 0)
}

// setCounted moves the end of the records that readers see to pos.
func (l *Ledger) setCounted(pos journal.Pos) {
	l.countedMu.Lock()
	l.counted = pos
	l.countedMu.Unlock()
}

// countedEnd is where the records that the store counts end.
func (l *Ledger) countedEnd() journal.Pos {
	l.countedMu.RLock()
	defer l.countedMu.RUnlock()
	return l.counted
}

// recover counts in the store the journal's records after the position
// the store counts up to: those appended before a crash or a kill that
// came before their store transaction committed.
func (l *Ledger) recover(ctx context.Context) error {
	var from journal.Pos
	v, err := l.s.Get(ctx, []byte(keyJournalCount))
	switch {
	case err == nil:
		if err := from.UnmarshalBinary(v); err != nil {
			return err
		}
	case !errors.Is(err, store.ErrNotFound):
		return err
	}
	end := l.j.End()
	if end.Less(from) {
		// The journal lost its tail, in a crash of the machine, or its
		// files: the store counts records that are gone. The scan below
		// finds nothing, and the count moves back to the journal's end.
		l.log.Error("the ledger journal ends before the records the store counts; records were lost",
			zap.Stringer("journal_end", end), zap.Stringer("counted_to", from))
	}
	var recs []*Record
	var indexAt []journal.Pos
	recovered := 0
	apply := func(upTo journal.Pos) error {
		err := l.s.Update(ctx, func(txn store.Txn) error { return l.count(txn, recs, indexAt, upTo) })
		recovered += len(recs)
		recs, indexAt = recs[:0], indexAt[:0]
		return err
	}
	err = l.j.Scan(from, end, time.Time{}, func(pos journal.Pos, b []byte) error {
		if len(recs) == maxBatch {
			if err := apply(pos); err != nil {
				return err
			}
		}
		e, err := decodeEntry(b)
		if err != nil {
			l.log.Error("skipping an undecodable ledger journal entry", zap.Stringer("position", pos), zap.Error(err))
			return nil
		}
		recs = append(recs, &e.rec)
		if e.indexed {
			indexAt = append(indexAt, pos)
		} else {
			indexAt = append(indexAt, journal.Pos{})
		}
		return nil
	})
	if err != nil {
		return err
	}
	if from != end {
		if err := apply(end); err != nil {
			return err
		}
	}
	if recovered > 0 {
		l.log.Warn("counted ledger records that were written but not counted before the last stop", zap.Int("records", recovered))
	}
	l.setCounted(end)
	return nil
}

// expire deletes the journal segments whose every record is past the
// retention.
func (l *Ledger) expire(now time.Time) {
	l.lastExpiry = now
	n, err := l.j.RemoveBefore(now.Add(-l.retention))
	if err != nil {
		l.log.Error("deleting expired ledger journal segments", zap.Error(err))
	}
	if n > 0 {
		l.log.Info("deleted expired ledger journal segments", zap.Int("segments", n))
	}
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
	if pos, ok := journalPosFromIndex(idx); ok {
		b, err := l.j.Read(pos)
		if errors.Is(err, journal.ErrNoEntry) {
			return Record{}, store.ErrNotFound
		}
		if err != nil {
			return Record{}, err
		}
		e, err := decodeEntry(b)
		if err != nil {
			return Record{}, fmt.Errorf("decoding ledger record %s: %w", id, err)
		}
		return e.rec, nil
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

// Records calls fn for every record with since <= Time < until that is
// within the retention, in the order they were written. A zero since or
// until is unbounded. fn may return store.ErrStop. Records enqueued but
// not yet written are not included; Flush first to include them.
//
// Records that earlier versions kept in the store come first, oldest first:
// they are older than every record in the journal.
func (l *Ledger) Records(ctx context.Context, since, until time.Time, fn func(Record) error) error {
	stopped := false
	stopAware := func(rec Record) error {
		err := fn(rec)
		if errors.Is(err, store.ErrStop) {
			stopped = true
		}
		return err
	}
	for _, prefix := range []string{prefixRecordsV1, prefixRecordsV2} {
		if err := l.recordsIn(ctx, prefix, since, until, stopAware); err != nil || stopped {
			return err
		}
	}
	end := l.countedEnd()
	if end.IsZero() {
		return nil
	}
	expired := time.Now().Add(-l.retention)
	// A record is written after its Time, so segments that were complete
	// before since hold none of its records.
	err := l.j.Scan(journal.Pos{}, end, since, func(pos journal.Pos, b []byte) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		e, err := decodeEntry(b)
		if err != nil {
			return fmt.Errorf("decoding ledger record at %s: %w", pos, err)
		}
		if !e.appended.After(expired) || !since.IsZero() && e.rec.Time.Before(since) || !until.IsZero() && !e.rec.Time.Before(until) {
			return nil
		}
		if err := fn(e.rec); err != nil {
			if errors.Is(err, store.ErrStop) {
				return journal.ErrStop
			}
			return err
		}
		return nil
	})
	return err
}

// recordsIn calls fn for every record that an earlier version stored under
// prefix with since <= Time < until, oldest first, seeking straight to
// since.
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
