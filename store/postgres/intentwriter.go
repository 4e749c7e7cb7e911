package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"go.uber.org/zap"
)

// run commits added intents and deletes resolved ones until Close. A
// commit of new intents starts at once when the previous one started
// in.gather or longer ago, else when that much time has passed. Resolved
// intents go with the next commit, or resolveInterval after the first of
// them; an idle writer has no timer running.
func (in *Intents) run(ctx context.Context) {
	defer close(in.done)
	defer in.closeConn()
	t := time.NewTimer(resolveInterval)
	t.Stop()
	armed := false
	gather := time.NewTimer(time.Hour)
	gather.Stop()
	var last time.Time // start of the last commit of new intents
	for {
		select {
		case <-ctx.Done():
			// The last round, for what was added before the close.
			in.mu.Lock()
			in.closed = true
			in.mu.Unlock()
			in.commit()
			return
		case <-in.resolved:
			if !armed {
				t.Reset(resolveInterval)
				armed = true
			}
			continue
		case <-t.C:
			armed = false
		case <-in.kick:
			if wait := time.Duration(in.gather.Load()) - time.Since(last); wait > 0 {
				gather.Reset(wait)
				select {
				case <-ctx.Done():
					gather.Stop()
					continue
				case <-gather.C:
				}
			}
		}
		start := time.Now()
		if in.commit() {
			last = start
		}
		in.mu.Lock()
		pending := len(in.resolve) > 0
		in.mu.Unlock()
		if pending && !armed {
			// Deletions kept after a failure.
			t.Reset(resolveInterval)
			armed = true
		}
	}
}

// commit writes the batch of added intents and deletes the resolved
// ones, in one statement, and tells the batch's Adds how it went; it
// reports whether there was a batch. On a failure the batch's Adds fail
// (their requests are refused and resolve their intents, which the
// statement may have committed after all) and the deletions are kept for
// the next round.
func (in *Intents) commit() bool {
	in.mu.Lock()
	batch, resolve := in.next, in.resolve
	in.next, in.resolve = nil, nil
	in.mu.Unlock()
	if batch == nil && len(resolve) == 0 {
		return false
	}
	var ids []string
	var recs [][]byte
	if batch != nil {
		ids, recs = batch.ids, batch.recs
		if len(ids) > 1 {
			// The statement updates a row it conflicts with (a journaled
			// record over its intent), which it may not do twice.
			ids, recs = dropRepeated(ids, recs)
		}
	}
	if len(ids) > 0 && len(resolve) > 0 {
		// An intent resolved before its commit (its Add timed out) is
		// not written; the statement's DELETE would not see it.
		ids, recs, resolve = dropResolved(ids, recs, resolve)
	}
	if ids == nil {
		ids, recs = []string{}, [][]byte{}
	}
	if resolve == nil {
		resolve = []string{}
	}
	// Not the writer's context: a stop must not fail the commit under
	// way. Bounded, so that a database that does not answer cannot hang
	// the writer (the Adds gave up after intentWait already).
	ctx, cancel := context.WithTimeout(context.Background(), commitTimeout)
	defer cancel()
	err := in.write(ctx, recs, resolve)
	if batch != nil {
		if err == nil {
			in.commits.Add(1)
		}
		batch.err = err
		close(batch.committed)
	}
	if err == nil {
		return batch != nil
	}
	in.db.log.Warn("writing ledger intents failed", zap.Int("intents", len(ids)), zap.Int("resolved", len(resolve)), zap.Error(err))
	in.mu.Lock()
	in.resolve = append(in.resolve, resolve...)
	in.mu.Unlock()
	return batch != nil
}

// insertIntents inserts the intents $2 (a JSON array of records, whose
// ids are their "ID") of instance $1, in their order, and deletes the
// resolved intents $3 (an array of ids): one statement, one implicit
// transaction. A journaled record (marked journaledKey, see journal.go)
// replaces the row of its id, its intent; an intent never replaces a row. It is prepared once on the writer's connection (as
// intentsStatement) and run with its parameters in text form, which are
// the bytes the writer has already or writes with a copy (the array
// literal of the ids): no encoding by pgx. The ids stay an array
// compared with = ANY, so that the deletion looks them up in the primary
// key: a join with the ids of a JSON array is planned as a scan of the
// whole table, dead rows included.
const insertIntents = `WITH resolved AS (DELETE FROM air_intents WHERE id = ANY($3::text[]))
	INSERT INTO air_intents (id, instance, record)
	SELECT r->>'ID', $1, r FROM jsonb_array_elements($2::jsonb) WITH ORDINALITY AS x(r, n) ORDER BY n
	ON CONFLICT (id) DO UPDATE SET instance = EXCLUDED.instance, record = EXCLUDED.record
		WHERE EXCLUDED.record ? '` + journaledKey + `'`

// intentsStatement is the name of insertIntents on the writer's
// connection.
const intentsStatement = "air_insert_intents"

// write runs insertIntents on the writer's own connection, taken out of
// the pool for good, whose session has synchronous_commit off, so that a
// commit is one statement and one round trip, prepared once. A
// connection that failed is closed and a new one taken by the next write.
func (in *Intents) write(ctx context.Context, recs [][]byte, resolve []string) error {
	if in.conn == nil {
		pc, err := in.db.pool.Acquire(ctx)
		if err != nil {
			return err
		}
		conn := pc.Hijack()
		if _, err := conn.Exec(ctx, "SET synchronous_commit = off"); err != nil {
			_ = conn.Close(ctx)
			return err
		}
		if _, err := conn.Prepare(ctx, intentsStatement, insertIntents); err != nil {
			_ = conn.Close(ctx)
			return err
		}
		in.conn = conn
	}
	in.array = append(in.array[:0], '[')
	for i, r := range recs {
		if i > 0 {
			in.array = append(in.array, ',')
		}
		in.array = append(in.array, r...)
	}
	in.array = append(in.array, ']')
	in.ids = appendTextArray(in.ids[:0], resolve)
	in.params[0], in.params[1], in.params[2] = in.instance, in.array, in.ids
	_, err := in.conn.PgConn().ExecPrepared(ctx, intentsStatement, in.params[:], nil, nil).Close()
	if err != nil && (in.conn.IsClosed() || ctx.Err() != nil || !isPgError(err)) {
		// Not an error of the statement: the connection may be broken or
		// left mid-statement.
		in.closeConn()
	}
	return err
}

// appendTextArray appends ss to b as a PostgreSQL array literal of text,
// each element quoted, its quotes and backslashes escaped.
func appendTextArray(b []byte, ss []string) []byte {
	b = append(b, '{')
	for i, s := range ss {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '"')
		for j := 0; j < len(s); j++ {
			if c := s[j]; c == '"' || c == '\\' {
				b = append(b, '\\')
			}
			b = append(b, s[j])
		}
		b = append(b, '"')
	}
	return append(b, '}')
}

// closeConn closes the writer's connection, if open.
func (in *Intents) closeConn() {
	if in.conn == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = in.conn.Close(ctx)
	in.conn = nil
}

// isPgError reports whether err is an error that the server answered.
func isPgError(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe)
}

// dropResolved removes from ids (and recs) the ids that resolve names,
// and those from resolve.
func dropResolved(ids []string, recs [][]byte, resolve []string) ([]string, [][]byte, []string) {
	gone := make(map[string]bool, len(resolve))
	for _, id := range resolve {
		gone[id] = true
	}
	keptIDs, keptRecs := ids[:0:0], recs[:0:0]
	for i, id := range ids {
		if gone[id] {
			delete(gone, id)
			continue
		}
		keptIDs, keptRecs = append(keptIDs, id), append(keptRecs, recs[i])
	}
	keptResolve := resolve[:0:0]
	for _, id := range resolve {
		if gone[id] {
			keptResolve = append(keptResolve, id)
		}
	}
	return keptIDs, keptRecs, keptResolve
}
