package billing

import (
	"context"
	"sync"
	"time"

	"go.uber.org/zap"
)

// Durability is how durable a record is when the end of its answer is
// released (Reservation.SettleDurable), and when Enqueue's done is told.
type Durability int32

const (
	// DurabilityJournaled, the default, releases an answer's end once its
	// record is written: on Badger, in the journal with a write(2); on
	// PostgreSQL, committed with synchronous_commit off. That survives
	// every death of the process (kill -9, an OOM kill, a panic). Syncs
	// (fdatasync; a synchronous commit) run in the background, in groups,
	// at most one every commit interval, and never hold up a write: a
	// crash of the machine or a power loss may lose the records written
	// in the last commit interval plus one sync.
	DurabilityJournaled Durability = iota
	// DurabilityStrict releases an answer's end once its record is synced
	// (one fdatasync or synchronous commit per batch, batches paced by the
	// commit interval): a delivered answer's record survives a crash of
	// the machine too, for up to a commit interval more before each
	// answer's end.
	DurabilityStrict
)

// String returns the name of d in the configuration.
func (d Durability) String() string {
	if d == DurabilityStrict {
		return "strict"
	}
	return "journaled"
}

// SetDurability sets the Durability of the records written from now on.
// A backend that is not a store.DeferredSync is always strict.
func (l *Ledger) SetDurability(d Durability) { l.durability.Store(int32(d)) }

// strict reports whether the writer syncs each batch before it reports
// its records written.
func (l *Ledger) strict() bool {
	return l.deferred == nil || Durability(l.durability.Load()) == DurabilityStrict
}

// syncer is what the writer hands to the background syncer of Durability
// journaled: the records written since the last sync, to be resolved in
// the intents once synced, and the flush markers to serve after it.
type syncer struct {
	mu      sync.Mutex
	ids     []string
	flushed []chan struct{}
	// since is when the oldest of ids was handed over, zero when ids is
	// empty; retryAt when a sync may be tried again after a failure.
	since, retryAt time.Time
	closing        bool
	wake           chan struct{} // has a value when there may be work
	done           chan struct{} // closed when the syncer stopped
}

// init makes s ready.
func (s *syncer) init() {
	s.wake, s.done = make(chan struct{}, 1), make(chan struct{})
}

// add hands the syncer the IDs of records just written and flush markers
// whose records were all written (or failed) before.
func (s *syncer) add(ids []string, flushed []chan struct{}) {
	s.mu.Lock()
	if len(s.ids) == 0 && len(ids) > 0 {
		s.since = time.Now()
	}
	s.ids = append(s.ids, ids...)
	s.flushed = append(s.flushed, flushed...)
	s.mu.Unlock()
	s.signal()
}

// unsynced returns how many written records wait for a sync, and how long
// the oldest of them has waited.
func (s *syncer) unsynced() (int, time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.ids) == 0 {
		return 0, 0
	}
	return len(s.ids), time.Since(s.since)
}

// pending reports whether records wait for a sync.
func (s *syncer) pending() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.ids) > 0 || len(s.flushed) > 0
}

// signal wakes the syncer.
func (s *syncer) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// stopSyncer makes the syncer sync what it was handed and stop, and waits
// for it (the writer's last act: Close drains into a sync).
func (l *Ledger) stopSyncer() {
	l.sync.mu.Lock()
	l.sync.closing = true
	l.sync.mu.Unlock()
	l.sync.signal()
	<-l.sync.done
}

// runSyncer is the background syncer of Durability journaled: it syncs
// the backend (store.DeferredSync.Sync) whenever records were written
// since its last sync, at most once every commit interval, then resolves
// their intents and serves the flush markers handed to it (with one count
// of the backend: Flush means durable and counted). It runs apart from
// the writer, which goes on writing (and releasing answers) while a sync
// runs. A batch with flush markers is synced at once, without the
// interval, as the writer serves markers in strict mode.
//
// The intents of written records are resolved after their sync, not after
// the write: on Badger, where neither is synced before, a crash of the
// machine that loses the record may keep its intent, which the next start
// records as interrupted (unbilled) rather than not at all.
//
// A failed sync keeps the records for the next one. On Badger it stops
// the ledger (store.Ledger.Err), since the kernel may have dropped the
// pages; the records are in the journal file, and the next start syncs
// and counts them.
func (l *Ledger) runSyncer() {
	s := &l.sync
	defer close(s.done)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		s.mu.Lock()
		work, marked, closing := len(s.ids) > 0, len(s.flushed) > 0, s.closing
		s.mu.Unlock()
		if !work && !marked {
			if closing {
				return
			}
			<-s.wake
			continue
		}
		if !marked && !closing {
			s.mu.Lock()
			retryAt := s.retryAt
			s.mu.Unlock()
			wait := time.Until(time.Unix(0, l.lastSync.Load()+l.commitInterval.Load()))
			if w := time.Until(retryAt); w > wait {
				wait = w // a failed sync is tried again after retryInterval
			}
			if wait > 0 {
				timer.Reset(wait)
				select {
				case <-timer.C:
				case <-s.wake:
					// A flush marker, or a stop, may not wait for the
					// interval: look again.
					if !timer.Stop() {
						<-timer.C
					}
					continue
				}
			}
		}
		s.mu.Lock()
		ids, flushed, since := s.ids, s.flushed, s.since
		s.ids, s.flushed, s.since = nil, nil, time.Time{}
		s.mu.Unlock()
		if err := l.syncOnce(ids, flushed, since); err != nil && closing {
			// The writer has stopped: the records are written, and the
			// next start (Badger) or the server's WAL writer
			// (PostgreSQL) makes them durable.
			return
		}
	}
}

// syncOnce syncs the backend for the records ids, written before (the
// oldest handed over at since), then resolves their intents and serves
// the flush markers flushed. It returns the sync's error; the records of a
// failed sync wait for the next one, retryInterval later.
func (l *Ledger) syncOnce(ids []string, flushed []chan struct{}, since time.Time) error {
	t := time.Now()
	l.lastSync.Store(t.UnixNano())
	err := l.deferred.Sync(context.Background())
	switch {
	case err != nil:
		l.log.Error("syncing ledger records; tried again with the next sync", zap.Int("records", len(ids)), zap.Error(err))
		l.sync.mu.Lock()
		l.sync.retryAt = time.Now().Add(retryInterval)
		if l.repo.Err() == nil && len(ids) > 0 {
			l.sync.ids, l.sync.since = append(ids, l.sync.ids...), since
		}
		l.sync.mu.Unlock()
	case len(ids) > 0:
		l.stats.synced(len(ids), time.Since(t))
		l.intents.Resolve(ids)
	}
	if len(flushed) > 0 {
		l.countFlushed(flushed)
	}
	return err
}

// Durability returns the Durability of the records written from now on:
// strict when the backend cannot write without a sync.
func (l *Ledger) Durability() Durability {
	if l.strict() {
		return DurabilityStrict
	}
	return DurabilityJournaled
}
