package billing

import (
	"context"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/caddy-air/caddy-air/store"
)

// run is the writer: it hands queued records to the backend in batches,
// one store.Ledger.Append each (group commit), and reports them durable,
// until the ledger is closed and its queue is empty.
//
// A batch holds every record queued since the previous one. Syncs are
// paced (pace): a batch waits until the commit interval has passed since
// the last sync began, so that at a high rate many records share one sync,
// while a lone record on an idle ledger is written at once. A client's
// last byte waits for its record's sync.
func (l *Ledger) run() {
	defer close(l.done)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	armed := false
	var spare, retry []job
	for {
		select {
		case <-l.wake:
		case <-timer.C:
			armed = false
		}
		var closed bool
		for {
			l.pace()
			var jobs []job
			l.mu.Lock()
			jobs, l.queue, spare = l.queue, spare[:0], nil
			closed = l.closed
			l.mu.Unlock()
			if len(jobs) == 0 && len(retry) == 0 {
				spare = jobs
				break
			}
			retry = l.writeJobs(jobs, retry)
			clear(jobs)
			spare = jobs[:0]
			if len(jobs) == 0 {
				break // only retries: wait for new records or the timer
			}
		}
		if closed && l.Queued() == 0 {
			if len(retry) > 0 {
				for _, j := range retry {
					l.logFailed(j.rec, errLedgerClosedUnwritten)
				}
			}
			return
		}
		if len(retry) > 0 && !armed {
			timer.Reset(retryInterval)
			armed = true
		}
	}
}

// DefaultCommitInterval is the least time between the starts of two
// batches, and so of two journal syncs on Badger: records that arrive meanwhile wait and share the next
// sync. A sync costs about 300 µs of CPU on this project's virtual disks
// whatever it carries, so syncing each request alone costs more than a
// bare reverse proxy spends on the request itself. Spacing syncs by 25 ms
// bounds them to 40 a second, about 1.2% of a core whatever the load, for
// at most 25 ms more before a response's last bytes (half of it on
// average under load; an idle ledger syncs a lone record at once). See
// bench/README.md for the measured trade-off.
const DefaultCommitInterval = 25 * time.Millisecond

// SetCommitInterval sets the least time between the starts of two syncs
// (zero or negative: each group is synced at once).
func (l *Ledger) SetCommitInterval(d time.Duration) { l.commitInterval.Store(int64(max(d, 0))) }

// pace waits until the commit interval has passed since the last sync
// began.
func (l *Ledger) pace() {
	next := l.lastSync.Load() + l.commitInterval.Load()
	if wait := time.Until(time.Unix(0, next)); wait > 0 {
		time.Sleep(wait)
	}
}

// retryInterval is how soon records whose write failed are tried again
// when no new record comes.
const retryInterval = time.Second

// maxRetry bounds the records kept for another try after failed writes;
// beyond it the oldest are logged and dropped.
const maxRetry = 1 << 16

// errLedgerClosedUnwritten reports records still failing when the ledger
// closed.
var errLedgerClosedUnwritten = errorString("the ledger closed before the storage took this record")

// errorString is a constant error.
type errorString string

func (e errorString) Error() string { return string(e) }

// writeJobs commits the records of retry (earlier failures, already
// reported) and jobs in batches of maxBatch, reports each job's record to
// its callback, serves the flush markers, and returns the records to try
// again.
func (l *Ledger) writeJobs(jobs, retry []job) []job {
	all := append(retry, jobs...)
	var failed []job
	for len(all) > 0 {
		n := min(len(all), maxBatch)
		batch := all[:n]
		all = all[n:]
		recs := make([]*Record, 0, n)
		for i := range batch {
			if batch[i].rec != nil {
				recs = append(recs, batch[i].rec)
			}
		}
		err := l.appendBatch(recs)
		if err == nil && len(recs) > 0 {
			ids := make([]string, len(recs))
			for i, rec := range recs {
				ids[i] = rec.ID
			}
			l.intents.Resolve(ids)
		}
		for i := range batch {
			j := &batch[i]
			if j.flushed != nil {
				if err := l.repo.Flush(context.Background()); err != nil {
					l.log.Error("counting ledger records; tried again later, and at the next start", zap.Error(err))
				}
				close(j.flushed)
				continue
			}
			if err != nil {
				if len(failed) == 0 {
					l.log.Error("writing ledger records; they stay queued and are tried again", zap.Int("records", len(recs)), zap.Error(err))
				}
				failed = append(failed, job{rec: j.rec})
			}
			if j.done != nil {
				j.done(err)
			}
		}
	}
	if over := len(failed) - maxRetry; over > 0 {
		for _, j := range failed[:over] {
			l.logFailed(j.rec, errorString("too many ledger records failed to be written; dropped"))
		}
		failed = failed[over:]
	}
	return failed
}

// appendBatch makes recs durable in one store.Ledger.Append.
func (l *Ledger) appendBatch(recs []*Record) error {
	if len(recs) == 0 {
		return nil
	}
	batch := make([]store.Record, len(recs))
	for i, rec := range recs {
		batch[i] = rec.toStore()
	}
	t := time.Now()
	l.lastSync.Store(t.UnixNano())
	if err := l.repo.Append(context.Background(), batch); err != nil {
		return err
	}
	l.stats.synced(len(recs), time.Since(t))
	return nil
}

// LedgerStats is the writer's state, for health checks and metrics.
type LedgerStats struct {
	// Queued is the number of records waiting for the writer.
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
}

// ledgerStats are the counters behind LedgerStats.
type ledgerStats struct {
	batches, records, lastSync atomic.Int64
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

// Lag is the age of the oldest record waiting for the writer, zero when
// none waits.
func (l *Ledger) Lag() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lagLocked()
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
	l.mu.Lock()
	queued, lag := len(l.queue), l.lagLocked()
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
	return st
}
