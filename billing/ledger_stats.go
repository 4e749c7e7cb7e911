package billing

import (
	"sync/atomic"
	"time"

	"github.com/caddy-air/caddy-air/store"
)

// LedgerStats is the writer's state, for health checks and metrics.
type LedgerStats struct {
	// Queued is the number of records waiting for the writer, or,
	// written in journaled mode, for their sync.
	Queued int
	// OldestQueued is how long the oldest of them has waited; zero when
	// none waits. Records the writer took and is writing do not count.
	OldestQueued time.Duration
	// Batches is the number of batches made durable so far (journal
	// syncs on Badger).
	Batches int64
	// Records is the number of records made durable so far.
	Records int64
	// LastSync is how long the last batch took to be made durable.
	LastSync time.Duration
	// Broken is why the ledger refuses records, if it does.
	Broken string
	// Damaged are the regions of the ledger's storage that reads found
	// damaged and skip (see store.DamageReporter).
	Damaged []store.Damage
}

// ledgerStats are the counters behind LedgerStats.
type ledgerStats struct {
	batches, records, lastSync atomic.Int64
	// written counts the records written without a sync (Durability
	// journaled); records counts them once synced.
	written atomic.Int64
	// observe, if set, is told of every sync (SetSyncObserver).
	observe atomic.Pointer[func(time.Duration)]
}

// synced counts a sync of n records that took d.
func (s *ledgerStats) synced(n int, d time.Duration) {
	s.batches.Add(1)
	s.records.Add(int64(n))
	s.lastSync.Store(int64(d))
	if f := s.observe.Load(); f != nil {
		(*f)(d)
	}
}

// SetSyncObserver makes f be called, from the writer, with the time each
// batch commit (journal append and sync) took; nil stops the calls. f
// must be quick: the writer waits for it.
func (l *Ledger) SetSyncObserver(f func(time.Duration)) {
	if f == nil {
		l.stats.observe.Store(nil)
		return
	}
	l.stats.observe.Store(&f)
}

// Lag is the age of the oldest record waiting for the writer or, written
// in journaled mode, for its sync; zero when none waits.
func (l *Ledger) Lag() time.Duration {
	_, unsynced := l.sync.unsynced()
	l.mu.Lock()
	defer l.mu.Unlock()
	return max(l.lagLocked(), unsynced)
}

// lagLocked is Lag with l.mu held.
func (l *Ledger) lagLocked() time.Duration {
	for i := range l.queue {
		if l.queue[i].rec != nil {
			return time.Since(l.queue[i].queued)
		}
	}
	return 0
}

// Stats returns the writer's state.
func (l *Ledger) Stats() LedgerStats {
	unsynced, syncLag := l.sync.unsynced()
	l.mu.Lock()
	queued, lag := l.records+unsynced, max(l.lagLocked(), syncLag)
	l.mu.Unlock()
	st := LedgerStats{
		Queued:       queued,
		OldestQueued: lag,
		Batches:      l.stats.batches.Load(),
		Records:      l.stats.records.Load(),
		LastSync:     time.Duration(l.stats.lastSync.Load()),
	}
	if err := l.Backlogged(); err != nil {
		st.Broken = err.Error()
	}
	st.Damaged = l.Damaged()
	return st
}

// Damaged returns the damaged regions of the ledger's storage that reads
// found so far, if the store reports them (store.DamageReporter).
func (l *Ledger) Damaged() []store.Damage {
	if r, ok := l.repo.(store.DamageReporter); ok {
		return r.Damaged()
	}
	return nil
}
