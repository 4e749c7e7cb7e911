package billing

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
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
// position up to which it counts records.
//
// Durability is group commit: a single writer goroutine appends every
// record queued since its last commit in one write and syncs the journal
// once for all of them; then it reports each record durable (Enqueue's
// done). The journal is the source of truth: the store counts records
// after them, in one transaction for all records appended within
// countLinger, and a record the store has not counted when the gateway
// stops (a crash, kill -9, a failed transaction) is counted when it starts
// again. So the aggregates and spend can never disagree with the records,
// and a durable record is never undone. Write, for tasks, commits at once
// and indexes the ID in the same transaction; its entry is cut off the
// journal again if that transaction fails, so that a retry is not counted
// twice.
//
// A Ledger is long-lived: create one per store and Close it to drain it.
type Ledger struct {
	s         store.Store
	j         *journal.Journal
	retention time.Duration
	log       *zap.Logger
	intents   *intentLog
	// commitInterval is the least time between two syncs (see
	// DefaultCommitInterval), and lastSync when the last began (unix
	// nanoseconds).
	commitInterval, lastSync atomic.Int64

	// commitMu serializes commits: appending to the journal and counting
	// in the store must happen in the same order.
	commitMu   sync.Mutex
	broken     error     // why commits are refused: the journal could not be synced or cut back
	jclosed    bool      // the journal is closed
	lastExpiry time.Time // when old segments were last deleted
	uncounted  []*Record // appended and synced, not yet counted in the store
	rescan     bool      // uncounted was dropped: count from the journal instead
	lastCount  time.Time // when the store last counted

	countedMu sync.RWMutex
	counted   journal.Pos // where the records the store counts end; readers see no further

	mu     sync.Mutex // guards closed and queue
	closed bool
	queue  []job
	wake   chan struct{} // has a value when queue may not be empty
	done   chan struct{}

	stats ledgerStats
}

// job is a queued record, or a flush marker when flushed is set.
type job struct {
	rec     *Record
	done    func(err error)
	flushed chan struct{}
	// queued is when rec was enqueued (see Lag).
	queued time.Time
}

// Sizes and times of the writer.
const (
	// maxBatch bounds the records of one commit.
	maxBatch = 1024
	// countLinger is how long appended records may wait to be counted in
	// the store: one store transaction counts all records appended within
	// it. Records are durable before; reports see them after.
	countLinger = 50 * time.Millisecond
	// maxUncounted bounds the records kept in memory while the store
	// cannot count them; beyond it they are counted from the journal.
	maxUncounted = 1 << 16
	// MaxQueued is the number of records waiting for the writer beyond
	// which Backlogged reports the ledger as backlogged and new billable
	// work is refused: the storage is not keeping up.
	MaxQueued = 1 << 16
)

// journalPreallocate is the step by which the journal's last segment is
// extended with zeros ahead of its records, so that a group commit's sync
// flushes data alone (see journal.Options.Preallocate).
const journalPreallocate = 4 << 20

// NewLedger opens the ledger whose journal is in dir (created if missing)
// and whose aggregates, spend and index are in s. It keeps records for
// retention (zero or negative: DefaultRetention), counts in s the records
// that s did not count yet, and starts the writer. log may be nil.
//
// The intents of requests that were in flight when the gateway stopped are
// read too; SettleInterrupted records them.
func NewLedger(s store.Store, dir string, retention time.Duration, log *zap.Logger) (*Ledger, error) {
	if retention <= 0 {
		retention = DefaultRetention
	}
	if log == nil {
		log = zap.NewNop()
	}
	j, err := journal.Open(journal.Options{Dir: dir, Preallocate: journalPreallocate})
	if err != nil {
		return nil, err
	}
	logRepair(log, "ledger journal", j.Repair())
	l := &Ledger{
		s:         s,
		j:         j,
		retention: retention,
		log:       log,
		wake:      make(chan struct{}, 1),
		done:      make(chan struct{}),
	}
	l.commitInterval.Store(int64(DefaultCommitInterval))
	if err := l.recover(context.Background()); err != nil {
		_ = j.Close()
		return nil, fmt.Errorf("ledger: %w", err)
	}
	if l.intents, err = openIntents(filepath.Join(dir, intentsDir), log); err != nil {
		_ = j.Close()
		return nil, fmt.Errorf("ledger: %w", err)
	}
	l.expire(time.Now())
	go l.run()
	return l, nil
}

// logRepair logs what opening a journal repaired.
func logRepair(log *zap.Logger, what string, r journal.Repair) {
	switch {
	case r.Quarantined != "":
		log.Error(what+": corrupt entries after the last intact one; the segment was copied aside and cut back",
			zap.String("segment", r.Segment), zap.Int64("valid_end", r.ValidEnd), zap.Int64("bytes_cut", r.Cut),
			zap.String("quarantined_copy", r.Quarantined))
	case r.Cut > 0:
		log.Warn(what+": cut off a torn tail left by a crash",
			zap.String("segment", r.Segment), zap.Int64("valid_end", r.ValidEnd), zap.Int64("bytes_cut", r.Cut))
	}
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
	fresh, err := l.commit(ctx, []*Record{&rec}, true)
	if err != nil {
		return false, err
	}
	return fresh[0], nil
}

// Enqueue queues rec for the writer and returns at once; it never blocks
// and never drops a record. rec is appended: its ID must be new, like a
// request's random ID, for it is not looked up (an ID index entry per
// request would cost a store write per request). done, if not nil, is
// called from the writer once rec is durable (appended and synced), or
// with the error that kept it from being so; a record whose write failed
// stays queued and is written with a later batch, without a second call
// of done. After Close, Enqueue writes rec at once, and a failure is logged
// with the record's user, key and cost.
func (l *Ledger) Enqueue(rec Record, done func(err error)) {
	now := time.Now()
	rec.fillDefaults(now)
	l.mu.Lock()
	if !l.closed {
		l.queue = append(l.queue, job{rec: &rec, done: done, queued: now})
		l.mu.Unlock()
		l.signal()
		return
	}
	l.mu.Unlock()
	_, err := l.commit(context.Background(), []*Record{&rec}, false)
	if err != nil {
		l.logFailed(&rec, err)
	}
	if done != nil {
		done(err)
	}
}

// signal wakes the writer.
func (l *Ledger) signal() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// Queued is the number of records waiting for the writer.
func (l *Ledger) Queued() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.queue)
}

// Backlogged reports why new billable work should wait: more than
// MaxQueued records wait for the writer, or the ledger stopped accepting
// records. Nil when the ledger keeps up.
func (l *Ledger) Backlogged() error {
	if n := l.Queued(); n > MaxQueued {
		return fmt.Errorf("%d ledger records wait for the storage", n)
	}
	l.commitMu.Lock()
	defer l.commitMu.Unlock()
	return l.broken
}

// Flush waits until every record enqueued before the call is durable and
// counted in the store (or its write has failed, and it waits to be tried
// again), or ctx ends.
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
// until the queue is drained into the journal and the store; then it
// closes the journal. It does not close the store. Records enqueued after
// Close are written at once. Records still queued when the time is up are
// logged and reported in the error.
func (l *Ledger) Close() error {
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
	l.signal()
	select {
	case <-l.done:
	case <-time.After(closeTimeout):
		n := l.Queued()
		l.log.Error("ledger: the storage did not take the queued records in time; they are lost", zap.Int("records", n))
		return fmt.Errorf("ledger: %d queued records were not written within %s", n, closeTimeout)
	}
	l.commitMu.Lock()
	defer l.commitMu.Unlock()
	if l.jclosed {
		return nil
	}
	l.jclosed = true
	return errors.Join(l.j.Close(), l.intents.close())
}

// logFailed logs a record that could not be written, with what an operator
// needs to bill it by hand.
func (l *Ledger) logFailed(rec *Record, err error) {
	l.log.Error("writing ledger record", zap.String("id", rec.ID), zap.String("user", rec.User),
		zap.String("key_id", rec.KeyID), zap.String("model", rec.Model), zap.String("cost", rec.Cost.String()),
		zap.String("currency", rec.Currency), zap.Error(err))
}

// commit appends recs to the journal, syncs it and counts them (and any
// uncounted records before them) in the store, and reports which were
// new. If idempotent, it skips records whose ID an earlier idempotent
// commit wrote, or that came earlier in recs, and indexes the IDs of the
// others; otherwise every record is new. If the store's transaction fails,
// recs are cut off the journal again.
func (l *Ledger) commit(ctx context.Context, recs []*Record, idempotent bool) ([]bool, error) {
	l.commitMu.Lock()
	defer l.commitMu.Unlock()
	switch {
	case l.jclosed:
		return nil, errors.New("ledger closed")
	case l.broken != nil:
		return nil, l.broken
	}
	// Index lookups and the cut-back below need every earlier record
	// counted.
	if err := l.countLocked(ctx); err != nil {
		return nil, err
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
	start := l.j.End()
	pos, end, err := l.appendLocked(add, idempotent)
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
	l.lastCount = time.Now()
	l.maybeExpire()
	return fresh, nil
}

// appendLocked encodes recs, appends them to the journal in one write and
// syncs it. A failed sync stops the ledger: after it, the kernel may have
// dropped the pages, and nothing written since the last good sync can be
// trusted to be on disk (PostgreSQL learned this the hard way).
func (l *Ledger) appendLocked(recs []*Record, indexed bool) ([]journal.Pos, journal.Pos, error) {
	now := time.Now()
	entries := make([][]byte, len(recs))
	for i, rec := range recs {
		var err error
		if entries[i], err = encodeEntry(rec, indexed, now); err != nil {
			return nil, journal.Pos{}, fmt.Errorf("encoding record %s: %w", rec.ID, err)
		}
	}
	pos, end, err := l.j.Append(entries)
	if err != nil {
		return nil, journal.Pos{}, err
	}
	t := time.Now()
	l.lastSync.Store(t.UnixNano())
	if err := l.j.Sync(); err != nil {
		l.broken = fmt.Errorf("ledger stopped: syncing the journal failed; restart the gateway once the storage is healthy: %w", err)
		l.log.Error("ledger stopped", zap.Error(l.broken))
		return nil, journal.Pos{}, l.broken
	}
	l.stats.synced(len(recs), time.Since(t))
	return pos, end, nil
}

// countLocked counts in the store the records appended but not counted
// yet. l.commitMu must be held.
func (l *Ledger) countLocked(ctx context.Context) error {
	end := l.j.End()
	if end == l.countedEnd() {
		l.uncounted = l.uncounted[:0]
		return nil
	}
	if l.rescan {
		// The records are no longer in memory: count them from the
		// journal, as at a start.
		if err := l.recover(ctx); err != nil {
			return err
		}
		l.rescan, l.uncounted = false, l.uncounted[:0]
		l.lastCount = time.Now()
		return nil
	}
	err := l.s.Update(ctx, func(txn store.Txn) error { return l.count(txn, l.uncounted, nil, end) })
	if err != nil {
		if len(l.uncounted) > maxUncounted {
			l.uncounted, l.rescan = nil, true
		}
		return fmt.Errorf("counting ledger records: %w", err)
	}
	clear(l.uncounted)
	l.uncounted = l.uncounted[:0]
	l.setCounted(end)
	l.lastCount = time.Now()
	l.maybeExpire()
	return nil
}

// maybeExpire deletes expired segments at most every expiryInterval.
func (l *Ledger) maybeExpire() {
	if now := time.Now(); now.Sub(l.lastExpiry) >= expiryInterval {
		l.expire(now)
	}
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
		if e.rec.ID != id {
			// The index outlived its entry (a journal repaired after a
			// crash of the machine): the position names another record.
			return Record{}, store.ErrNotFound
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
