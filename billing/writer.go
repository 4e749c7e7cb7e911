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
// paced (take): a batch of records waits until the commit interval has
// passed since the last sync began, so that at a high rate many records
// share one sync, while a lone record on an idle ledger is written at
// once. A batch of flush markers alone has nothing to sync and is served
// at once. A client's last byte waits for its record's sync.
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
			var jobs []job
			var g *commitGroup
			jobs, g, closed = l.take(spare, len(retry) > 0)
			if len(jobs) == 0 && len(retry) == 0 {
				spare = jobs
				break
			}
			var err error
			var durable int
			retry, durable, err = l.writeJobs(jobs, retry)
			if g != nil {
				g.finish(err, durable)
			}
			clear(jobs)
			spare = jobs[:0]
			if len(jobs) == 0 {
				break // only retries: wait for new records or the timer
			}
		}
		if closed && l.idle() {
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

// take waits until the next batch may be committed and takes the queue
// for it, leaving spare (emptied) in its place, with the commit group of
// its waiters and whether the ledger is closed. A batch that will commit
// records (retrying says earlier ones are to be tried again) waits for
// the commit interval since the last sync began; records queued meanwhile
// join it. A queue of flush markers alone is taken at once: it has
// nothing to sync, and pacing it would hold Flush (reports, a config
// stop) for an interval for nothing.
func (l *Ledger) take(spare []job, retrying bool) ([]job, *commitGroup, bool) {
	l.mu.Lock()
	for l.records > 0 || retrying {
		wait := time.Until(time.Unix(0, l.lastSync.Load()+l.commitInterval.Load()))
		if wait <= 0 {
			break
		}
		l.mu.Unlock()
		time.Sleep(wait)
		l.mu.Lock()
	}
	jobs, g, closed := l.queue, l.group, l.closed
	l.queue, l.group, l.records = spare[:0], nil, 0
	l.mu.Unlock()
	return jobs, g, closed
}

// idle reports whether nothing waits for the writer.
func (l *Ledger) idle() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.queue) == 0
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
// its callback, serves the flush markers once every record is committed,
// and returns the records to try again, how many of the first jobs are
// durable before the first failed batch that held records of jobs, and
// that batch's error (what the commit group of jobs reports: a waiter is
// told its record is durable if it is, though a later batch failed).
func (l *Ledger) writeJobs(jobs, retry []job) ([]job, int, error) {
	all := append(retry, jobs...)
	fresh := len(retry) // all[fresh:] are jobs
	var failed []job
	var first error
	durable := 0
	markers, logged := 0, false
	for at := 0; at < len(all); {
		n := min(len(all)-at, maxBatch)
		batch := all[at : at+n]
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
		if err != nil && first == nil && at+n > fresh {
			first = err
		}
		if first == nil {
			durable = max(at+n-fresh, 0)
		}
		if err != nil && !logged {
			logged = true
			l.log.Error("writing ledger records; they stay queued and are tried again", zap.Int("records", len(recs)), zap.Error(err))
		}
		for i := range batch {
			j := &batch[i]
			if j.flushed != nil {
				markers++
				continue
			}
			if err != nil {
				failed = append(failed, job{rec: j.rec})
			}
			if j.done != nil {
				j.done(err)
			}
		}
		at += n
	}
	if markers > 0 {
		// One count serves every marker: each asks for the records
		// queued before it, all committed (or failed) by now.
		if err := l.repo.Flush(context.Background()); err != nil {
			l.log.Error("counting ledger records; tried again later, and at the next start", zap.Error(err))
		}
		for i := range all {
			if all[i].flushed != nil {
				close(all[i].flushed)
			}
		}
	}
	if over := len(failed) - maxRetry; over > 0 {
		for _, j := range failed[:over] {
			l.logFailed(j.rec, errorString("too many ledger records failed to be written; dropped"))
		}
		failed = failed[over:]
	}
	return failed, durable, first
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
	// Damaged are the regions of the ledger's storage that reads found
	// damaged and skip (see store.DamageReporter).
	Damaged []store.Damage
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
	queued, lag := l.records, l.lagLocked()
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
