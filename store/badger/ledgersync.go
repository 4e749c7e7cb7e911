package badger

import (
	"context"

	"github.com/caddy-air/caddy-air/store"
	"github.com/caddy-air/caddy-air/store/badger/journal"
)

// Write implements store.DeferredSync: one journal write for all of recs,
// without a sync. They survive a kill of the process from then on (the
// write is in the kernel's page cache, and the next start syncs the
// journal before it counts it); a crash of the machine may lose them
// until a Sync covers them.
//
// Only synced records are counted in the DB's aggregates and spend, and
// the position the DB counts up to never passes the synced end of the
// journal: if a crash of the machine loses the journal's unsynced tail,
// the DB counts nothing that is gone, and the counted position stays a
// position of the journal that is there (the next start counts from it
// whatever of the tail survived). Counting the records at once and
// reconciling after a crash would need the DB to take back counts, which
// it cannot tell apart once merged; counting after the sync costs only
// the count's delay, which is countLinger (500 ms) anyway.
func (l *Ledger) Write(_ context.Context, recs []store.Record) error {
	if len(recs) == 0 {
		return nil
	}
	ptrs := make([]*store.Record, len(recs))
	for i := range recs {
		ptrs[i] = &recs[i]
	}
	l.commitMu.Lock()
	defer l.commitMu.Unlock()
	if err := l.usable(); err != nil {
		return err
	}
	pos, _, err := l.writeLocked(ptrs, false)
	if err != nil {
		return err
	}
	l.unsynced = append(l.unsynced, ptrs...)
	l.unsyncedAt = append(l.unsyncedAt, pos...)
	l.writes += uint64(len(ptrs))
	return nil
}

// Sync implements store.DeferredSync: it syncs the journal and hands the
// records that Write put before the call to the count. It holds
// l.commitMu only to note the journal's end before the sync and to move
// the records after it: Write, and so the answers waiting for it, go on
// while the disk syncs. A failed sync stops the ledger (see
// appendLocked).
func (l *Ledger) Sync(context.Context) error {
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	l.commitMu.Lock()
	if err := l.usable(); err != nil {
		l.commitMu.Unlock()
		return err
	}
	target, end := l.writes, l.j.End()
	pending := len(l.unsynced) > 0
	l.commitMu.Unlock()
	if !pending {
		return nil
	}
	if err := l.syncJournalWith(l.locked); err != nil {
		return err
	}
	l.commitMu.Lock()
	defer l.commitMu.Unlock()
	if l.closed {
		// Close counted nothing unsynced; the next start counts them.
		return nil
	}
	// An Append or Insert meanwhile synced and handed over some of them
	// already.
	l.promoteLocked(int(target-l.promoted), end)
	l.armCount(countLinger)
	return nil
}

// locked runs f with l.commitMu held.
func (l *Ledger) locked(f func()) {
	l.commitMu.Lock()
	defer l.commitMu.Unlock()
	f()
}

// promoteLocked notes that the journal is synced up to end, which covers
// the first n unsynced records, and hands them to the count. l.commitMu
// must be held.
func (l *Ledger) promoteLocked(n int, end journal.Pos) {
	if l.synced.Less(end) {
		l.synced = end
	}
	if n <= 0 {
		return
	}
	l.promoted += uint64(n)
	if !l.rescan {
		l.uncounted = append(l.uncounted, l.unsynced[:n]...)
		l.uncountedAt = append(l.uncountedAt, l.unsyncedAt[:n]...)
		if len(l.uncounted) > maxUncounted {
			l.uncounted, l.uncountedAt, l.rescan = nil, nil, true
		}
	}
	rest := copy(l.unsynced, l.unsynced[n:])
	clear(l.unsynced[rest:])
	l.unsynced, l.unsyncedAt = l.unsynced[:rest], l.unsyncedAt[:copy(l.unsyncedAt, l.unsyncedAt[n:])]
}

// Interface guard.
var _ store.DeferredSync = (*Ledger)(nil)
