package badger

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/caddy-air/caddy-air/store"
	"github.com/caddy-air/caddy-air/store/badger/journal"
)

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
	pos, end, err := l.appendLocked(ptrs, false)
	if err != nil {
		return err
	}
	// The sync covered the records that Write put before these.
	l.promoteLocked(len(l.unsynced), end)
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
	// counted, and so synced: records that Write put in the journal are
	// synced here (Insert is rare: a task's charge).
	if len(l.unsynced) > 0 {
		end := l.j.End()
		if err := l.syncJournal(); err != nil {
			return nil, err
		}
		l.promoteLocked(len(l.unsynced), end)
	}
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
	l.synced = end
	l.setCounted(end)
	l.maybeExpire()
	return fresh, nil
}

// appendLocked encodes recs, appends them to the journal in one write and
// syncs it. A failed sync stops the ledger: after it, the kernel may have
// dropped the pages, and nothing written since the last good sync can be
// trusted to be on disk (PostgreSQL learned this the hard way).
func (l *Ledger) appendLocked(recs []*store.Record, indexed bool) ([]journal.Pos, journal.Pos, error) {
	pos, end, err := l.writeLocked(recs, indexed)
	if err != nil {
		return nil, journal.Pos{}, err
	}
	if err := l.syncJournal(); err != nil {
		return nil, journal.Pos{}, err
	}
	return pos, end, nil
}

// syncJournal syncs the journal, and stops the ledger if that fails (see
// appendLocked). l.commitMu need not be held; l.broken is set under it.
func (l *Ledger) syncJournal() error {
	return l.syncJournalWith(func(f func()) { f() })
}

// syncJournalWith is syncJournal for a caller that does not hold
// l.commitMu: locked runs its function with it held.
func (l *Ledger) syncJournalWith(locked func(func())) error {
	err := l.j.Sync()
	if err == nil {
		return nil
	}
	var broken error
	locked(func() {
		if l.broken == nil {
			l.broken = fmt.Errorf("ledger stopped: syncing the journal failed; restart the gateway once the storage is healthy: %w", err)
			l.log.Error("ledger stopped", zap.Error(l.broken))
		}
		broken = l.broken
	})
	return broken
}

// writeLocked encodes recs and appends them to the journal in one write,
// without a sync.
func (l *Ledger) writeLocked(recs []*store.Record, indexed bool) ([]journal.Pos, journal.Pos, error) {
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
	return l.j.Append(entries)
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
