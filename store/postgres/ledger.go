package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/caddy-air/caddy-air/store"
)

// Ledger is the ledger repository. Each Append or Insert is one
// transaction: the records go in with one multi-row INSERT … ON CONFLICT
// (id) DO NOTHING, and the aggregates and spend counters of the records
// that were new are updated in the same transaction, so they count each
// record exactly once however often a batch is retried, and across
// instances. A transaction takes two round trips (see insertOnce). When
// Append returns, the transaction has committed: a
// client's last byte, which waits for it, waits for the commit.
type Ledger struct {
	db *DB
	// retention is how long records are kept after they were written
	// (Records hides older ones and the retention job deletes them).
	retention time.Duration
}

// ledgerColumns are the columns of a record, in the order of recordArgs.
const ledgerColumns = `id, ts, endpoint, user_name, key_id, model, provider, input, cache_creation, cache_read,
	output, reasoning, source, status, outcome, images, video_ms, tier, priced, currency, cost,
	cache_creation_1h, service_tier, deployment, served_model`

// insertRecords inserts the records given as arrays, skipping ids already
// present, and returns the ids it inserted.
const insertRecords = `INSERT INTO air_ledger (` + ledgerColumns + `)
	SELECT * FROM unnest($1::text[], $2::timestamptz[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[],
		$8::bigint[], $9::bigint[], $10::bigint[], $11::bigint[], $12::bigint[], $13::text[], $14::int[], $15::text[],
		$16::int[], $17::bigint[], $18::int[], $19::bool[], $20::text[], $21::bigint[], $22::bigint[], $23::text[], $24::text[], $25::text[])
	ON CONFLICT (id) DO NOTHING RETURNING id`

// recordArgs turns recs into the column arrays of insertRecords.
func recordArgs(recs []store.Record) []any {
	n := len(recs)
	var (
		ids, endpoints, users, keyIDs, models, providers, sources, outcomes, currencies = make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		ts                                                                              = make([]time.Time, n)
		input, cacheCreation, cacheRead, output, reasoning, videoMS, cost               = make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n)
		status, images, tier                                                            = make([]int32, n), make([]int32, n), make([]int32, n)
		priced                                                                          = make([]bool, n)
		cacheCreation1h, serviceTiers                                                   = make([]int64, n), make([]string, n)
		deployments, servedModels                                                       = make([]string, n), make([]string, n)
	)
	for i := range recs {
		r := &recs[i]
		ids[i], ts[i], endpoints[i], users[i], keyIDs[i], models[i], providers[i] = r.ID, r.Time.UTC(), r.Endpoint, r.User, r.KeyID, r.Model, r.Provider
		input[i], cacheCreation[i], cacheRead[i], output[i], reasoning[i] = r.Usage.Input, r.Usage.CacheCreation, r.Usage.CacheRead, r.Usage.Output, r.Usage.Reasoning
		sources[i], status[i], outcomes[i], images[i], videoMS[i], tier[i] = r.Source, int32(r.Status), r.Outcome, int32(r.Images), r.VideoMillis, int32(r.Tier)
		priced[i], currencies[i], cost[i] = r.Priced, r.Currency, r.Cost
		cacheCreation1h[i], serviceTiers[i] = r.Usage.CacheCreation1h, r.ServiceTier
		deployments[i], servedModels[i] = r.Deployment, r.ServedModel
	}
	return []any{ids, ts, endpoints, users, keyIDs, models, providers, input, cacheCreation, cacheRead, output, reasoning,
		sources, status, outcomes, images, videoMS, tier, priced, currencies, cost, cacheCreation1h, serviceTiers,
		deployments, servedModels}
}

func scanRecord(row pgx.Row) (store.Record, error) {
	var r store.Record
	var status, images, tier int32
	err := row.Scan(&r.ID, &r.Time, &r.Endpoint, &r.User, &r.KeyID, &r.Model, &r.Provider,
		&r.Usage.Input, &r.Usage.CacheCreation, &r.Usage.CacheRead, &r.Usage.Output, &r.Usage.Reasoning,
		&r.Source, &status, &r.Outcome, &images, &r.VideoMillis, &tier, &r.Priced, &r.Currency, &r.Cost,
		&r.Usage.CacheCreation1h, &r.ServiceTier, &r.Deployment, &r.ServedModel)
	if errors.Is(err, pgx.ErrNoRows) {
		return r, store.ErrNotFound
	}
	r.Time = r.Time.UTC()
	r.Status, r.Images, r.Tier = int(status), int(images), int(tier)
	return r, err
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

// insert writes recs and counts the new ones in one transaction, retried
// on deadlocks and serialization failures, and returns how many were new.
func (l *Ledger) insert(ctx context.Context, recs []store.Record) (int, error) {
	for attempt := 1; ; attempt++ {
		n, err := l.insertOnce(ctx, recs)
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

// insertOnce is one attempt of insert, in two round trips: BEGIN and the
// insert of the records, which returns the ids that were new; then the
// counts of the new records and COMMIT. A failed attempt is rolled back.
func (l *Ledger) insertOnce(ctx context.Context, recs []store.Record) (int, error) {
	conn, err := l.db.pool.Acquire(ctx)
	if err != nil {
		return 0, err
	}
	defer conn.Release()
	b := &pgx.Batch{}
	b.Queue("BEGIN")
	b.Queue(insertRecords, recordArgs(recs)...)
	br := conn.SendBatch(ctx, b)
	_, err = br.Exec()
	var ids []string
	if err == nil {
		var rows pgx.Rows
		if rows, err = br.Query(); err == nil {
			ids, err = pgx.CollectRows(rows, pgx.RowTo[string])
		}
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		rollback(conn)
		return 0, err
	}
	fresh := recs
	if len(ids) < len(recs) {
		isNew := make(map[string]bool, len(ids))
		for _, id := range ids {
			isNew[id] = true
		}
		fresh = make([]store.Record, 0, len(ids))
		for _, r := range recs {
			if isNew[r.ID] {
				fresh = append(fresh, r)
				delete(isNew, r.ID) // a repeated id within recs counts once
			}
		}
	}
	b = &pgx.Batch{}
	queueCounts(b, fresh)
	b.Queue("COMMIT")
	if err := conn.SendBatch(ctx, b).Close(); err != nil {
		rollback(conn)
		return 0, err
	}
	return len(ids), nil
}

// rollback ends the transaction that conn may be in; a connection that
// cannot is closed (the pool then drops it).
func rollback(conn *pgxpool.Conn) {
	pc := conn.Conn().PgConn()
	if pc.IsClosed() || pc.TxStatus() == 'I' {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := conn.Exec(ctx, "ROLLBACK"); err != nil {
		_ = conn.Conn().Close(ctx)
	}
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
// that writes them, so there is never anything left to count.
func (l *Ledger) Flush(ctx context.Context) error { return ctx.Err() }

// Err implements store.Ledger: a failed transaction fails only its own
// call, so the ledger never refuses records for good.
func (l *Ledger) Err() error { return nil }

// Close implements store.Ledger; the pool is closed by the DB.
func (l *Ledger) Close() error { return nil }

// Interface guard.
var _ store.Ledger = (*Ledger)(nil)
