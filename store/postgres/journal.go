package postgres

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/caddy-air/caddy-air/store"
)

// The journal of ledger_durability journaled on PostgreSQL. Write puts
// each finished record in its request's row of air_intents (over its
// intent, marked journaledKey), in the intent writer's next commit:
// asynchronous, grouped with whatever intents and records arrived while
// the previous commit ran, one cheap statement with no aggregate to
// update. A kill of the gateway after Write returned loses nothing: the
// instance that takes over its intents (Intents.Interrupted) writes a
// journaled record to the ledger as it was written, not as interrupted.
// Sync writes the records journaled since the last Sync to the ledger,
// with their counts, in one statement whose commit is synchronous, so
// the ledger statement runs once per commit interval instead of once per
// answer, and the WAL it flushes covers the journal rows before it.

// journaledKey marks a row of air_intents as a finished record
// (Ledger.Write) rather than an intent.
const journaledKey = "Journaled"

// syncChunk bounds the records of one ledger statement of Sync.
const syncChunk = 500

// journaled are the records written by Ledger.Write and not yet by
// Ledger.Sync to the ledger, in the order they were written.
type journaled struct {
	mu   sync.Mutex
	recs []store.Record
}

// Write implements store.DeferredSync: it journals recs (see above) and
// returns once their commit, with synchronous_commit off, returned: they
// survive any death of the gateway, and a crash of the database server
// loses at most what its WAL writer had not flushed (wal_writer_delay,
// 200 ms by default, up to three times that), or less with the billing
// syncer's Syncs. They reach the ledger, its aggregates and spend with
// the next Sync.
func (l *Ledger) Write(ctx context.Context, recs []store.Record) error {
	if len(recs) == 0 {
		return nil
	}
	if err := l.db.intents.journal(ctx, recs); err != nil {
		return err
	}
	j := &l.db.journaled
	j.mu.Lock()
	j.recs = append(j.recs, recs...)
	j.mu.Unlock()
	return nil
}

// Sync implements store.DeferredSync: it writes the records journaled
// before the call to the ledger and counts them (insertLedger, records
// already there skipped), in statements that commit synchronously, as
// durable as the server's synchronous_commit says; that flushes the WAL of
// every earlier asynchronous commit too. With nothing journaled it commits
// a transaction that writes WAL (a no-op update of the instance's lease
// row: one that writes none commits without a flush). If the lease row is
// gone (another instance took this one for dead), the heartbeat's upsert
// writes it again. On an error the records not yet written stay for the
// next Sync.
func (l *Ledger) Sync(ctx context.Context) error {
	j := &l.db.journaled
	j.mu.Lock()
	recs := j.recs[:len(j.recs):len(j.recs)]
	j.mu.Unlock()
	if len(recs) == 0 {
		tag, err := l.db.pool.Exec(ctx, `UPDATE air_instances SET expires = expires WHERE id = $1`, l.db.instance)
		if err == nil && tag.RowsAffected() == 0 {
			err = l.db.heartbeat(ctx)
		}
		return err
	}
	for len(recs) > 0 {
		n := min(len(recs), syncChunk)
		if _, err := l.insert(ctx, recs[:n]); err != nil {
			return err
		}
		recs = recs[n:]
		// Only Sync removes records, from the front, and Write appends:
		// the first n are those just written.
		j.mu.Lock()
		j.recs = append(j.recs[:0], j.recs[n:]...)
		j.mu.Unlock()
	}
	return nil
}

// journal adds recs, finished records, to the writer's next commit, which
// writes each over its request's intent (or as a new row), marked
// journaledKey, and waits for that commit or for ctx.
func (in *Intents) journal(ctx context.Context, recs []store.Record) error {
	in.mu.Lock()
	if in.closed {
		in.mu.Unlock()
		return errors.New("postgres: intents closed")
	}
	if in.next == nil {
		in.next = &intentBatch{committed: make(chan struct{})}
	}
	batch := in.next
	for i := range recs {
		c := recs[i]
		// Cut to the microsecond, as the ledger keeps it (see
		// appendLedgerRecords), so that a record written by a takeover
		// is the one Sync would have written.
		c.Time = c.Time.Truncate(time.Microsecond)
		b := appendIntent(make([]byte, 0, 512), &c)
		b = append(append(b[:len(b)-1], `,"`+journaledKey+`":true`...), '}')
		batch.ids, batch.recs = append(batch.ids, c.ID), append(batch.recs, b)
	}
	in.mu.Unlock()
	select {
	case in.kick <- struct{}{}:
	default:
	}
	select {
	case <-batch.committed:
		return batch.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// dropRepeated keeps, of the ids (and recs) of a batch, the last of each
// id: a record written over its intent in the same commit, or a record
// written twice, is one row, which a statement that updates on conflict
// must not reach twice.
func dropRepeated(ids []string, recs [][]byte) ([]string, [][]byte) {
	last := make(map[string]int, len(ids))
	for i, id := range ids {
		last[id] = i
	}
	if len(last) == len(ids) {
		return ids, recs
	}
	keptIDs, keptRecs := make([]string, 0, len(last)), make([][]byte, 0, len(last))
	for i, id := range ids {
		if last[id] == i {
			keptIDs, keptRecs = append(keptIDs, id), append(keptRecs, recs[i])
		}
	}
	return keptIDs, keptRecs
}
