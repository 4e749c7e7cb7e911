package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/caddy-air/caddy-air/store"
)

// Ledger is the ledger repository. Each Append or Insert is one
// statement, and so one transaction and one round trip (see
// insertLedger): the records go in with one multi-row INSERT … ON
// CONFLICT (id) DO NOTHING, and the aggregates and spend counters of the
// records that were new are updated by the same statement, so they count
// each record exactly once however often a batch is retried, and across
// instances. When Append returns, the transaction has committed, as
// durably as the server's synchronous_commit says (only the intent
// writer turns it off, for its own connection): a client's last byte,
// which waits for it in ledger_durability strict, waits for the commit.
// In journaled mode Write journals records instead and Sync writes them
// here (journal.go).
type Ledger struct {
	db *DB
	// retention is how long records are kept after they were written
	// (Records hides older ones and the retention job deletes them).
	retention time.Duration
}

// ledgerColumns are the columns of a record, in the order of scanRecord.
const ledgerColumns = `id, ts, endpoint, user_name, key_id, model, provider, input, cache_creation, cache_read,
	output, reasoning, source, status, outcome, images, video_ms, tier, priced, currency, cost,
	cache_creation_1h, service_tier, deployment, served_model, audio_input, audio_output, image_input, image_output, web_searches, web_fetches, file_searches, code_sessions, image_calls, unpriced_charges,
	duration_ms, characters, audio_ms, search_units, team, tags`

func scanRecord(row pgx.Row) (store.Record, error) {
	var r store.Record
	var n recordInts
	err := row.Scan(recordDest(&r, &n)...)
	if errors.Is(err, pgx.ErrNoRows) {
		return r, store.ErrNotFound
	}
	n.set(&r)
	return r, err
}

// recordInts are the int4 columns of a record, scanned apart from it.
type recordInts struct{ status, images, tier int32 }

// set copies n into r and makes r's time UTC.
func (n *recordInts) set(r *store.Record) {
	r.Time = r.Time.UTC()
	r.Status, r.Images, r.Tier = int(n.status), int(n.images), int(n.tier)
}

// recordDest is the scan destinations of ledgerColumns.
func recordDest(r *store.Record, n *recordInts) []any {
	u := &r.Usage
	return []any{&r.ID, &r.Time, &r.Endpoint, &r.User, &r.KeyID, &r.Model, &r.Provider,
		&u.Input, &u.CacheCreation, &u.CacheRead, &u.Output, &u.Reasoning,
		&r.Source, &n.status, &r.Outcome, &n.images, &r.VideoMillis, &n.tier, &r.Priced, &r.Currency, &r.Cost,
		&u.CacheCreation1h, &r.ServiceTier, &r.Deployment, &r.ServedModel,
		&u.AudioInput, &u.AudioOutput, &u.ImageInput, &u.ImageOutput, &u.WebSearches,
		&u.WebFetches, &u.FileSearches, &u.CodeSessions, &u.ImageCalls, &r.Unpriced, &r.DurationMillis,
		&u.Characters, &u.AudioMillis, &u.SearchUnits, &r.Team, &r.Tags}
}

// Append implements store.Ledger.
func (l *Ledger) Append(ctx context.Context, recs []store.Record) error {
	if len(recs) == 0 {
		return nil
	}
	_, err := l.insert(ctx, recs)
	return err
}

// Insert implements store.Ledger.
func (l *Ledger) Insert(ctx context.Context, rec store.Record) (bool, error) {
	n, err := l.insert(ctx, []store.Record{rec})
	return n == 1, err
}

// insert writes recs and counts the new ones in one statement (see
// insertLedger), retried on deadlocks and serialization failures, and
// returns how many were new.
func (l *Ledger) insert(ctx context.Context, recs []store.Record) (int, error) {
	return l.insertWith(ctx, recs, ledgerStatement, insertLedger)
}

// insertWith is insert with the statement sql, prepared as name.
func (l *Ledger) insertWith(ctx context.Context, recs []store.Record, name, sql string) (int, error) {
	arg := appendLedgerRecords(make([]byte, 0, 64+400*len(recs)), recs)
	for attempt := 1; ; attempt++ {
		n, err := l.insertOnce(ctx, arg, name, sql)
		if err == nil || attempt >= maxTxAttempts || !retryable(err) {
			return n, err
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(time.Duration(attempt) * 5 * time.Millisecond):
		}
	}
}

// ledgerStatement is the name of insertLedger on the pool's connections.
const ledgerStatement = "air_insert_ledger"

// insertOnce runs insertLedger once, on a connection of the pool where it
// is prepared (once per connection), with its one parameter in text
// form: the JSON that appendLedgerRecords wrote, with no encoding by pgx.
func (l *Ledger) insertOnce(ctx context.Context, arg []byte, name, sql string) (int, error) {
	conn, err := l.db.pool.Acquire(ctx)
	if err != nil {
		return 0, err
	}
	defer conn.Release()
	if _, err := conn.Conn().Prepare(ctx, name, sql); err != nil {
		return 0, err
	}
	res := conn.Conn().PgConn().ExecPrepared(ctx, name, [][]byte{arg}, nil, nil).Read()
	if res.Err != nil {
		return 0, res.Err
	}
	if len(res.Rows) != 1 || len(res.Rows[0]) != 1 {
		return 0, fmt.Errorf("postgres: the ledger insert returned %d rows, want 1", len(res.Rows))
	}
	return strconv.Atoi(string(res.Rows[0][0]))
}

// Get implements store.Ledger.
func (l *Ledger) Get(ctx context.Context, id string) (store.Record, error) {
	return scanRecord(l.db.pool.QueryRow(ctx, `SELECT `+ledgerColumns+` FROM air_ledger WHERE id = $1`, id))
}

// Records implements store.Ledger, in the order the rows were inserted.
func (l *Ledger) Records(ctx context.Context, since, until time.Time, fn func(store.Record) error) error {
	cutoff := retentionCutoff(time.Now(), l.retention)
	var sinceArg, untilArg *time.Time
	if !since.IsZero() {
		sinceArg = &since
	}
	if !until.IsZero() {
		untilArg = &until
	}
	rows, err := l.db.pool.Query(ctx, `SELECT `+ledgerColumns+` FROM air_ledger
		WHERE ($1::timestamptz IS NULL OR ts >= $1) AND ($2::timestamptz IS NULL OR ts < $2)
			AND ($3::timestamptz IS NULL OR written >= $3) ORDER BY seq`, sinceArg, untilArg, cutoff)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		r, err := scanRecord(rows)
		if err != nil {
			return err
		}
		if err := fn(r); err != nil {
			if errors.Is(err, store.ErrStop) {
				return nil
			}
			return err
		}
	}
	return rows.Err()
}

// Flush implements store.Ledger: records are counted in the transaction
// that writes them to the ledger (Append, Insert, Sync), so there is
// never anything left to count; records journaled by Write and not yet
// synced are not in the ledger yet (store.DeferredSync: Flush counts what
// a Sync covered).
func (l *Ledger) Flush(ctx context.Context) error { return ctx.Err() }

// Err implements store.Ledger: a failed transaction fails only its own
// call, so the ledger never refuses records for good.
func (l *Ledger) Err() error { return nil }

// Close implements store.Ledger; the pool is closed by the DB.
func (l *Ledger) Close() error { return nil }

// Interface guards.
var _ store.Ledger = (*Ledger)(nil)
var _ store.DeferredSync = (*Ledger)(nil)
