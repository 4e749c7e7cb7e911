package billing

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/caddy-air/caddy-air/store"
)

// run is the writer: it hands queued records to the backend in batches,
// one store.Ledger.Append (Durability strict) or store.DeferredSync.Write
// (journaled) each, and reports them written, until the ledger is closed
// and its queue is empty; then it stops the syncer and waits for its last
// sync.
//
// A batch holds every record queued since the previous one. In strict
// mode batches are paced (take): a batch of records waits until the
// commit interval has passed since the last sync began, so that at a high
// rate many records share one sync, while a lone record on an idle ledger
// is written at once; a client's last byte waits for its record's sync.
// In journaled mode a batch is written as soon as the writer is free (the
// records that queued during the previous write make the next batch), its
// waiters are released once the write returned, and the syncer syncs in
// the background. A batch of flush markers alone has nothing to write and
// is served at once.
func (l *Ledger) run() {
	defer close(l.done)
	defer l.stopSyncer()
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
			retry = l.writeJobs(jobs, retry, g)
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

// take waits until the next batch may be written and takes the queue for
// it, leaving spare (emptied) in its place, with the commit group of its
// waiters and whether the ledger is closed. In strict mode a batch that
// will commit records waits for the commit interval since the last sync
// began; records queued meanwhile join it. A batch that retries records
// whose write failed (retrying) waits for the commit interval since the
// last batch began, in either mode, so that a storage that fails is not
// tried in a tight loop. A queue of flush markers alone is taken at once:
// it has nothing to write, and pacing it would hold Flush (reports, a
// config stop) for an interval for nothing.
func (l *Ledger) take(spare []job, retrying bool) ([]job, *commitGroup, bool) {
	l.mu.Lock()
	for {
		var since int64
		switch {
		case l.strict() && l.records > 0:
			since = l.lastSync.Load()
		case retrying:
			since = l.lastBatch.Load()
		default:
			since = -1
		}
		if since < 0 {
			break
		}
		wait := time.Until(time.Unix(0, since+l.commitInterval.Load()))
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
// journal syncs on Badger (two synchronous commits on PostgreSQL): records
// written meanwhile share the next sync. A sync costs about 300 µs of CPU
// on this project's virtual disks whatever it carries, so syncing each
// request alone costs more than a bare reverse proxy spends on the
// request itself. Spacing syncs by 25 ms bounds them to 40 a second,
// about 1.2% of a core whatever the load. In Durability journaled the
// syncs run in the background and an answer does not wait for them; in
// strict each answer waits for its batch's sync: up to 25 ms more before
// its last bytes (half of it on average under load; an idle ledger syncs
// a lone record at once). See docs/perf/history.md for the measured trade-off.
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

// writeJobs writes the records of retry (earlier failures, already
// reported) and jobs in batches of maxBatch, reports each job's record to
// its callback and its ack, serves the flush markers once every record is
// written (at once in strict mode; after the next sync in journaled
// mode), and returns the records to try again. g is the commit group of
// jobs' waiters, finished once every batch was tried, along with the
// group of retry's waiters; the waiters of records that failed get the
// group of their next try first.
func (l *Ledger) writeJobs(jobs, retry []job, g *commitGroup) []job {
	all := append(retry, jobs...)
	strict := l.strict()
	var failed []job
	var first error
	var next *commitGroup // the retry group of this attempt's failures
	var written []string  // journaled: the records the syncer must resolve
	markers, logged := 0, false
	l.lastBatch.Store(time.Now().UnixNano())
	for at := 0; at < len(all); {
		n := min(len(all)-at, maxBatch)
		batch := all[at : at+n]
		recs := make([]*Record, 0, n)
		for i := range batch {
			j := &batch[i]
			if j.rec == nil {
				continue
			}
			if j.ack != nil && !j.ack.take() {
				// Its client was given an error: not billed as answered.
				withhold(j.rec)
			}
			recs = append(recs, j.rec)
		}
		var err error
		if strict {
			err = l.appendBatch(recs)
			if err == nil && len(recs) > 0 {
				l.intents.Resolve(appendIDs(nil, recs))
			}
		} else {
			err = l.writeBatch(recs)
			if err == nil {
				written = appendIDs(written, recs)
			}
		}
		if err != nil && first == nil {
			first = err
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
				if j.ack != nil {
					if next == nil {
						next = newCommitGroup()
					}
					j.ack.group.Store(next)
					j.ack.state.CompareAndSwap(ackTaken, ackQueued)
				}
				failed = append(failed, job{rec: j.rec, ack: j.ack})
			} else if j.ack != nil {
				j.ack.state.CompareAndSwap(ackTaken, ackWritten)
			}
			if j.done != nil {
				j.done(err)
			}
		}
		at += n
	}
	var flushed []chan struct{}
	if markers > 0 {
		flushed = make([]chan struct{}, 0, markers)
		for i := range all {
			if all[i].flushed != nil {
				flushed = append(flushed, all[i].flushed)
			}
		}
	}
	if strict && !l.sync.pending() {
		if len(flushed) > 0 {
			// One count serves every marker: each asks for the records
			// queued before it, all committed (or failed) by now.
			l.countFlushed(flushed)
		}
	} else if len(written) > 0 || len(flushed) > 0 {
		l.sync.add(written, flushed)
	}
	if over := len(failed) - maxRetry; over > 0 {
		for _, j := range failed[:over] {
			l.logFailed(j.rec, errorString("too many ledger records failed to be written; dropped"))
		}
		failed = failed[over:]
	}
	if old := l.retryGroup; old != nil {
		old.finish(first)
	}
	l.retryGroup = next
	if g != nil {
		g.finish(first)
	}
	return failed
}

// countFlushed counts the records written so far in the backend's
// aggregates (store.Ledger.Flush) and serves the flush markers flushed.
func (l *Ledger) countFlushed(flushed []chan struct{}) {
	if err := l.repo.Flush(context.Background()); err != nil {
		l.log.Error("counting ledger records; tried again later, and at the next start", zap.Error(err))
	}
	for _, ch := range flushed {
		close(ch)
	}
}

// appendIDs appends the IDs of recs to ids.
func appendIDs(ids []string, recs []*Record) []string {
	for _, rec := range recs {
		ids = append(ids, rec.ID)
	}
	return ids
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

// writeBatch writes recs in one store.DeferredSync.Write (Durability
// journaled): they survive a kill of the process once it returns, and
// the syncer makes them durable.
func (l *Ledger) writeBatch(recs []*Record) error {
	if len(recs) == 0 {
		return nil
	}
	batch := make([]store.Record, len(recs))
	for i, rec := range recs {
		batch[i] = rec.toStore()
	}
	if err := l.deferred.Write(context.Background(), batch); err != nil {
		return err
	}
	l.stats.written.Add(int64(len(recs)))
	return nil
}
