package badger

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/dgraph-io/badger/v4"
	"go.uber.org/zap"

	"github.com/caddy-air/caddy-air/store"
	"github.com/caddy-air/caddy-air/store/badger/journal"
)

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

// Flush implements store.Ledger.
func (l *Ledger) Flush(ctx context.Context) error {
	l.commitMu.Lock()
	defer l.commitMu.Unlock()
	if l.closed {
		return nil
	}
	return l.countLocked(ctx)
}

// countLocked counts in the DB the records appended but not counted yet.
// l.commitMu must be held.
func (l *Ledger) countLocked(ctx context.Context) error {
	end := l.synced
	if end == l.countedEnd() {
		l.uncounted, l.uncountedAt = l.uncounted[:0], l.uncountedAt[:0]
		return nil
	}
	if l.rescan {
		// The records are no longer in memory: count them from the
		// journal, as at a start.
		if err := l.recover(ctx, end); err != nil {
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
// DB counts up to and before end (synced: see Write): those appended
// before a crash or a kill that came before their DB transaction
// committed.
func (l *Ledger) recover(ctx context.Context, end journal.Pos) error {
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
