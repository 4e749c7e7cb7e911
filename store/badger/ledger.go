package badger

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/dgraph-io/badger/v4"
	"go.uber.org/zap"

	"github.com/caddy-air/caddy-air/store"
	"github.com/caddy-air/caddy-air/store/badger/journal"
)

// DefaultRetention is how long ledger records are kept when OpenLedger is
// given no retention.
const DefaultRetention = 90 * 24 * time.Hour

// spendMonthTTL keeps a monthly spend counter past the end of its month.
const spendMonthTTL = 93 * 24 * time.Hour

// expiryInterval is how often journal segments past the retention are
// deleted.
const expiryInterval = time.Hour

// Ledger is store.Ledger on an append-only journal (package
// store/badger/journal says why) and a DB. Records go to the journal; the
// DB keeps what must be looked up: each record's contribution to its day ×
// user × key × model × currency aggregate and to the spend counters of its
// user and key, the ID index of Insert, and the journal position up to
// which it counts records.
//
// Append writes its records to the journal in one write and syncs it once
// (fdatasync) before it returns: that is the durability of a batch. The
// journal is the source of truth: the DB counts records after them, in one
// transaction for all records appended within countLinger, and a record
// the DB has not counted when the process stops (a crash, kill -9, a
// failed transaction) is counted when the ledger is opened again. So the
// aggregates and spend can never disagree with the records, and a durable
// record is never undone. Insert commits at once and indexes the ID in the
// same transaction; its entry is cut off the journal again if that
// transaction fails, so that a retry is not counted twice.
type Ledger struct {
	db        KV
	j         *journal.Journal
	retention time.Duration
	log       *zap.Logger
	intents   *Intents

	// commitMu serializes commits: appending to the journal and counting
	// in the DB must happen in the same order.
	commitMu   sync.Mutex
	enc        []byte    // appendLocked's buffer of encoded entries, reused under commitMu
	broken     error     // why commits are refused: the journal could not be synced or cut back
	closed     bool      // the journal is closed
	lastExpiry time.Time // when old segments were last deleted
	uncounted  []*store.Record
	// uncountedAt holds the journal position of each uncounted record.
	uncountedAt []journal.Pos
	rescan      bool        // uncounted was dropped: count from the journal instead
	countTimer  *time.Timer // armed while records wait to be counted

	countedMu sync.RWMutex
	counted   journal.Pos // where the records the DB counts end; readers see no further
}

// Sizes and times of the ledger.
const (
	// maxBatch bounds the records counted in one DB transaction when
	// counting from the journal. A record writes at most 8 keys (its
	// aggregate and index entry, its user's month, 4 spend counters, its
	// id), and a transaction of the lean DB takes about 1,600: 128 records
	// always fit.
	maxBatch = 128
	// countLinger is how long appended records may wait to be counted in
	// the DB: one transaction counts all records appended within it.
	// Records are durable before; reports see them after (the admin API's
	// reports flush first). A count costs about 300 µs of CPU whatever it
	// carries: at 10–50 requests a second, a shorter linger counts each
	// record alone, and the count is a tenth of the request's cost to the
	// gateway.
	countLinger = 500 * time.Millisecond
	// maxUncounted bounds the records kept in memory while the DB cannot
	// count them; beyond it they are counted from the journal.
	maxUncounted = 1 << 16
	// retryInterval is how soon a failed count is tried again.
	retryInterval = time.Second
)

// journalPreallocate is the step by which the journal's last segment is
// extended with zeros ahead of its records, so that a batch's sync flushes
// data alone (see journal.Options.Preallocate).
const journalPreallocate = 4 << 20

// intentsDir is the folder of the ledger's folder that holds the intents
// of requests in flight.
const intentsDir = "intents"

// OpenLedger opens the ledger whose journal is in dir (created if missing)
// and whose aggregates, spend and index are in db, with the intent log in
// dir's intents folder. It keeps records for retention (zero or negative:
// DefaultRetention) and counts in db the records that db did not count
// yet. log may be nil. Close it before db.
func OpenLedger(db KV, dir string, retention time.Duration, log *zap.Logger) (*Ledger, error) {
	if retention <= 0 {
		retention = DefaultRetention
	}
	if log == nil {
		log = zap.NewNop()
	}
	j, err := journal.Open(journal.Options{Dir: dir, Preallocate: journalPreallocate,
		OnDamage: logDamage(log, "ledger journal", dir, recordsDamageCost)})
	if err != nil {
		return nil, err
	}
	logRepair(log, "ledger journal", j.Repair())
	l := &Ledger{db: db, j: j, retention: retention, log: log}
	if err := buildUserIndex(context.Background(), db, log); err != nil {
		_ = j.Close()
		return nil, fmt.Errorf("ledger: %w", err)
	}
	if err := l.buildRecordIndex(context.Background()); err != nil {
		_ = j.Close()
		return nil, fmt.Errorf("ledger: %w", err)
	}
	if err := l.recover(context.Background()); err != nil {
		_ = j.Close()
		return nil, fmt.Errorf("ledger: %w", err)
	}
	if l.intents, err = openIntents(l, filepath.Join(dir, intentsDir), log); err != nil {
		_ = j.Close()
		return nil, fmt.Errorf("ledger: %w", err)
	}
	l.expire(time.Now())
	return l, nil
}

// Intents returns the ledger's intent log.
func (l *Ledger) Intents() *Intents { return l.intents }

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

// Append implements store.Ledger: one journal write and one sync for all
// of recs; they are counted in the DB within countLinger.
func (l *Ledger) Append(_ context.Context, recs []store.Record) error {
	if len(recs) == 0 {
		return nil
	}
	// The records are kept until counted (Append takes recs over).
	ptrs := make([]*store.Record, len(recs))
	for i := range recs {
		ptrs[i] = &recs[i]
	}
	l.commitMu.Lock()
	defer l.commitMu.Unlock()
	if err := l.usable(); err != nil {
		return err
	}
	pos, _, err := l.appendLocked(ptrs, false)
	if err != nil {
		return err
	}
	if !l.rescan {
		l.uncounted = append(l.uncounted, ptrs...)
		l.uncountedAt = append(l.uncountedAt, pos...)
	}
	l.armCount(countLinger)
	return nil
}

// usable reports why commits are refused. l.commitMu must be held.
func (l *Ledger) usable() error {
	switch {
	case l.closed:
		return errors.New("ledger closed")
	case l.broken != nil:
		return l.broken
	}
	return nil
}

// armCount makes sure the uncounted records are counted within d.
// l.commitMu must be held.
func (l *Ledger) armCount(d time.Duration) {
	if l.countTimer == nil {
		l.countTimer = time.AfterFunc(d, l.countDue)
	}
}

// countDue counts the uncounted records; a failure is tried again later,
// and at the next start.
func (l *Ledger) countDue() {
	l.commitMu.Lock()
	defer l.commitMu.Unlock()
	l.countTimer = nil
	if l.closed {
		return
	}
	if err := l.countLocked(context.Background()); err != nil {
		l.log.Error("counting ledger records in the store; tried again later, and at the next start", zap.Error(err))
		l.armCount(retryInterval)
	}
}

// Insert implements store.Ledger.
func (l *Ledger) Insert(ctx context.Context, rec store.Record) (bool, error) {
	if rec.ID == "" {
		return false, errors.New("ledger record without an id")
	}
	fresh, err := l.commit(ctx, []*store.Record{&rec})
	if err != nil {
		return false, err
	}
	return fresh[0], nil
}

// Flush implements store.Ledger.
func (l *Ledger) Flush(ctx context.Context) error {
	l.commitMu.Lock()
	defer l.commitMu.Unlock()
	if l.closed {
		return nil
	}
	return l.countLocked(ctx)
}

// Err implements store.Ledger.
func (l *Ledger) Err() error {
	l.commitMu.Lock()
	defer l.commitMu.Unlock()
	return l.broken
}

// Close counts the uncounted records and closes the journal and the
// intent log. It does not close the DB.
func (l *Ledger) Close() error {
	l.commitMu.Lock()
	defer l.commitMu.Unlock()
	if l.closed {
		return nil
	}
	var err error
	if l.broken == nil {
		if err = l.countLocked(context.Background()); err != nil {
			l.log.Error("counting ledger records at close; they are counted at the next start", zap.Error(err))
			err = nil
		}
	}
	if l.countTimer != nil {
		l.countTimer.Stop()
		l.countTimer = nil
	}
	l.closed = true
	return errors.Join(err, l.j.Close(), l.intents.close())
}

// commit appends recs to the journal, syncs it and counts them (and any
// uncounted records before them) in the DB, and reports which were new:
// it skips records whose ID an earlier commit wrote, or that came earlier
// in recs, and indexes the IDs of the others. If the DB's transaction
// fails, recs are cut off the journal again.
func (l *Ledger) commit(ctx context.Context, recs []*store.Record) ([]bool, error) {
	l.commitMu.Lock()
	defer l.commitMu.Unlock()
	if err := l.usable(); err != nil {
		return nil, err
	}
	// Index lookups and the cut-back below need every earlier record
	// counted.
	if err := l.countLocked(ctx); err != nil {
		return nil, err
	}
	fresh := make([]bool, len(recs))
	add, err := l.unwritten(ctx, recs, fresh)
	if err != nil {
		return nil, err
	}
	if len(add) == 0 {
		return fresh, nil
	}
	start := l.j.End()
	pos, end, err := l.appendLocked(add, true)
	if err != nil {
		return nil, err
	}
	err = l.db.Update(ctx, func(txn Txn) error { return l.count(txn, add, pos, pos, end) })
	if err != nil {
		if terr := l.j.Truncate(start); terr != nil {
			// The journal holds records the DB does not count; the next
			// start counts them. Until then, refuse to write more.
			l.broken = fmt.Errorf("ledger stopped: the journal could not be cut back after a failed commit: %w", terr)
			l.log.Error("ledger stopped", zap.Error(l.broken))
		}
		return nil, err
	}
	l.setCounted(end)
	l.maybeExpire()
	return fresh, nil
}

// appendLocked encodes recs, appends them to the journal in one write and
// syncs it. A failed sync stops the ledger: after it, the kernel may have
// dropped the pages, and nothing written since the last good sync can be
// trusted to be on disk (PostgreSQL learned this the hard way).
func (l *Ledger) appendLocked(recs []*store.Record, indexed bool) ([]journal.Pos, journal.Pos, error) {
	now := time.Now()
	// The entries are encoded one after the other into one buffer, which
	// the next batch reuses: Append copies them into its frames.
	entries := make([][]byte, len(recs))
	buf := l.enc[:0]
	for i, rec := range recs {
		start := len(buf)
		buf = appendEntry(buf, rec, indexed, now)
		entries[i] = buf[start:len(buf):len(buf)]
	}
	if cap(buf) <= 4<<20 {
		l.enc = buf
	}
	pos, end, err := l.j.Append(entries)
	if err != nil {
		return nil, journal.Pos{}, err
	}
	if err := l.j.Sync(); err != nil {
		l.broken = fmt.Errorf("ledger stopped: syncing the journal failed; restart the gateway once the storage is healthy: %w", err)
		l.log.Error("ledger stopped", zap.Error(l.broken))
		return nil, journal.Pos{}, l.broken
	}
	return pos, end, nil
}

// countLocked counts in the DB the records appended but not counted yet.
// l.commitMu must be held.
func (l *Ledger) countLocked(ctx context.Context) error {
	end := l.j.End()
	if end == l.countedEnd() {
		l.uncounted, l.uncountedAt = l.uncounted[:0], l.uncountedAt[:0]
		return nil
	}
	if l.rescan {
		// The records are no longer in memory: count them from the
		// journal, as at a start.
		if err := l.recover(ctx); err != nil {
			return err
		}
		l.rescan, l.uncounted, l.uncountedAt = false, l.uncounted[:0], l.uncountedAt[:0]
		return nil
	}
	err := l.db.Update(ctx, func(txn Txn) error { return l.count(txn, l.uncounted, l.uncountedAt, nil, end) })
	if errors.Is(err, badger.ErrTxnTooBig) {
		// More aggregates and counters than one transaction takes (a
		// burst of many users): count from the journal, in batches of
		// maxBatch records.
		l.log.Warn("counting ledger records from the journal in batches", zap.Int("records", len(l.uncounted)))
		clear(l.uncounted)
		l.uncounted, l.uncountedAt, l.rescan = l.uncounted[:0], l.uncountedAt[:0], true
		return l.countLocked(ctx)
	}
	if err != nil {
		if len(l.uncounted) > maxUncounted {
			l.uncounted, l.uncountedAt, l.rescan = nil, nil, true
		}
		return fmt.Errorf("counting ledger records: %w", err)
	}
	clear(l.uncounted)
	l.uncounted, l.uncountedAt = l.uncounted[:0], l.uncountedAt[:0]
	l.setCounted(end)
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
func (l *Ledger) unwritten(ctx context.Context, recs []*store.Record, fresh []bool) ([]*store.Record, error) {
	var add []*store.Record
	seen := map[string]bool{}
	for i, rec := range recs {
		if seen[rec.ID] {
			continue
		}
		// Only commits, which hold commitMu, write index entries: no other
		// one can come between this read and the commit.
		_, err := l.db.Get(ctx, recordIDKey(rec.ID))
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

// count adds recs to their aggregates and spend counters in txn, adds
// recs[i], at journal position at[i], to its user's record index, indexes
// the ID of recs[i] at indexAt[i] if indexAt is not nil and that position
// not zero, and records that the DB counts the journal up to end.
func (l *Ledger) count(txn Txn, recs []*store.Record, at, indexAt []journal.Pos, end journal.Pos) error {
	if err := l.indexRecords(txn, recs, at); err != nil {
		return err
	}
	aggs := map[store.AggregateKey]*store.Totals{}
	spend := map[string]int64{}
	for i, rec := range recs {
		if indexAt != nil && !indexAt[i].IsZero() {
			if err := txn.Set(recordIDKey(rec.ID), indexValue(indexAt[i]), l.retention); err != nil {
				return err
			}
		}
		ak := store.KeyOf(rec)
		t := aggs[ak]
		if t == nil {
			t = &store.Totals{}
			aggs[ak] = t
		}
		t.Add(rec)
		addSpend(spend, rec)
	}
	months := map[[3]string]*store.Totals{}
	for ak, t := range aggs {
		mk := [3]string{ak.Day[:len(store.MonthLayout)], ak.User, ak.Currency}
		if months[mk] == nil {
			months[mk] = &store.Totals{}
		}
		months[mk].Merge(t)
		created, err := mergeAggregate(txn, aggregateKey(ak), t)
		if err != nil {
			return err
		}
		if created {
			// A new aggregate joins its user's index: one small write per
			// user, key, model and day, not per record.
			if err := txn.Set(userAggregateKey(ak), nil, 0); err != nil {
				return err
			}
		}
	}
	for mk, t := range months {
		t.Sources, t.Outcomes = nil, nil
		if _, err := mergeAggregate(txn, monthUserKey(mk[0], mk[1], mk[2]), t); err != nil {
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

// countedEnd is where the records that the DB counts end.
func (l *Ledger) countedEnd() journal.Pos {
	l.countedMu.RLock()
	defer l.countedMu.RUnlock()
	return l.counted
}

// recover counts in the DB the journal's records after the position the
// DB counts up to: those appended before a crash or a kill that came
// before their DB transaction committed.
func (l *Ledger) recover(ctx context.Context) error {
	var from journal.Pos
	v, err := l.db.Get(ctx, []byte(keyJournalCount))
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
		// files: the DB counts records that are gone. The scan below
		// finds nothing, and the count moves back to the journal's end.
		l.log.Error("the ledger journal ends before the records the store counts; records were lost",
			zap.Stringer("journal_end", end), zap.Stringer("counted_to", from))
	}
	var recs []*store.Record
	var at, indexAt []journal.Pos
	recovered := 0
	apply := func(upTo journal.Pos) error {
		err := l.db.Update(ctx, func(txn Txn) error { return l.count(txn, recs, at, indexAt, upTo) })
		recovered += len(recs)
		recs, at, indexAt = recs[:0], at[:0], indexAt[:0]
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
		recs, at = append(recs, &e.rec), append(at, pos)
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
	l.logUncountedDamage(from, end)
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
func addSpend(spend map[string]int64, rec *store.Record) {
	if !rec.Priced || rec.Cost == 0 {
		return
	}
	month := store.MonthOf(rec.Time)
	for _, sub := range [...]store.Subject{{Scope: store.ScopeUser, ID: rec.User}, {Scope: store.ScopeKey, ID: rec.KeyID}} {
		if sub.ID == "" {
			continue
		}
		spend[string(spendKey(sub, rec.Currency, month))] += rec.Cost
		spend[string(spendKey(sub, rec.Currency, store.PeriodTotal))] += rec.Cost
	}
}

// mergeAggregate adds t to the aggregate stored under key, and reports
// whether it created the aggregate.
func mergeAggregate(txn Txn, key []byte, t *store.Totals) (bool, error) {
	old, err := txn.Get(key)
	created := errors.Is(err, store.ErrNotFound)
	switch {
	case err == nil:
		cur, err := decodeTotals(old)
		if err != nil {
			return false, fmt.Errorf("decoding aggregate %s: %w", key, err)
		}
		cur.Merge(t)
		t = &cur
	case !created:
		return false, err
	}
	val, err := encodeTotals(t)
	if err != nil {
		return false, err
	}
	return created, txn.Set(key, val, 0)
}

// addSpendCounter adds amt to the spend counter stored under key.
func addSpendCounter(txn Txn, key []byte, amt int64) error {
	old, err := txn.Get(key)
	switch {
	case err == nil:
		n, err := strconv.ParseInt(string(old), 10, 64)
		if err != nil {
			return fmt.Errorf("decoding spend counter %s: %w", key, err)
		}
		amt += n
	case !errors.Is(err, store.ErrNotFound):
		return err
	}
	var ttl time.Duration
	if !isTotalKey(key) {
		ttl = spendMonthTTL
	}
	return txn.Set(key, strconv.AppendInt(nil, amt, 10), ttl)
}

// isTotalKey reports whether a spend key is of the all-time period.
func isTotalKey(key []byte) bool {
	n := len(store.PeriodTotal)
	return len(key) >= n && string(key[len(key)-n:]) == store.PeriodTotal
}

// Get implements store.Ledger: it finds the records of Insert.
func (l *Ledger) Get(ctx context.Context, id string) (store.Record, error) {
	idx, err := l.db.Get(ctx, recordIDKey(id))
	if err != nil {
		return store.Record{}, err
	}
	pos, ok := journalPosFromIndex(idx)
	if !ok {
		// An index entry of a version before the journal: its record was
		// in the store, whose legacy formats are no longer read.
		return store.Record{}, store.ErrNotFound
	}
	b, err := l.j.Read(pos)
	if errors.Is(err, journal.ErrNoEntry) {
		return store.Record{}, store.ErrNotFound
	}
	if err != nil {
		return store.Record{}, err
	}
	e, err := decodeEntry(b)
	if err != nil {
		return store.Record{}, fmt.Errorf("decoding ledger record %s: %w", id, err)
	}
	if e.rec.ID != id {
		// The index outlived its entry (a journal repaired after a crash
		// of the machine): the position names another record.
		return store.Record{}, store.ErrNotFound
	}
	return e.rec, nil
}

// Records implements store.Ledger.
func (l *Ledger) Records(ctx context.Context, since, until time.Time, fn func(store.Record) error) error {
	end := l.countedEnd()
	if end.IsZero() {
		return nil
	}
	expired := time.Now().Add(-l.retention)
	// A record is written after its Time, so segments that were complete
	// before since hold none of its records.
	return l.j.Scan(journal.Pos{}, end, since, func(pos journal.Pos, b []byte) error {
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
}

// Interface guard.
var _ store.Ledger = (*Ledger)(nil)
