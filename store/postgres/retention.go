package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// retentionLockID is the advisory lock of the retention job: one instance
// at a time runs it (the number spells "air-rete").
const retentionLockID int64 = 0x6169722d72657465

// Swept counts what one run of the retention job deleted.
type Swept struct {
	// Ran is false when another instance held the job's lock.
	Ran bool
	// Records, Tasks, Media, Leases, Responses and Buckets are the rows
	// deleted: ledger records past the retention, expired tasks, media,
	// budget leases and response ids, and rate-limit buckets idle for a
	// day (a bucket nobody used starts full, as an idle one would be).
	Records, Tasks, Media, Leases, Responses, Buckets int64
	// Files and Batches are the expired file records and batches deleted.
	Files, Batches int64
	// RequestLogs are the expired request logs deleted.
	RequestLogs int64
}

// Sweep runs the retention job once, if no other instance is running it:
// under a transaction-level advisory lock taken with pg_try_advisory_xact_lock,
// it deletes what expired by now. The gateway runs it every minute on
// every instance; only one at a time does the work.
func (db *DB) Sweep(ctx context.Context, now time.Time) (Swept, error) {
	var s Swept
	err := pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, `SELECT pg_try_advisory_xact_lock($1)`, retentionLockID).Scan(&s.Ran); err != nil || !s.Ran {
			return err
		}
		for _, q := range []struct {
			n   *int64
			sql string
			arg any
		}{
			{&s.Records, `DELETE FROM air_ledger WHERE $1::timestamptz IS NOT NULL AND written < $1`, retentionCutoff(now, db.retention)},
			{&s.Tasks, `DELETE FROM air_tasks WHERE expires <= $1`, now},
			{&s.Files, `DELETE FROM air_files WHERE expires <= $1`, now},
			{&s.Batches, `DELETE FROM air_batches WHERE expires <= $1`, now},
			{&s.Media, `DELETE FROM air_media WHERE expires <= $1`, now},
			{&s.Leases, `DELETE FROM air_leases WHERE expires <= $1`, now},
			{&s.Responses, `DELETE FROM air_responses WHERE expires <= $1`, now},
			{&s.Buckets, `DELETE FROM air_buckets WHERE at <= $1`, now.Add(-24 * time.Hour)},
			{&s.RequestLogs, `DELETE FROM air_request_logs WHERE expires <= $1`, now},
		} {
			tag, err := tx.Exec(ctx, q.sql, q.arg)
			if err != nil {
				return err
			}
			*q.n = tag.RowsAffected()
		}
		return nil
	})
	return s, err
}

func retentionCutoff(now time.Time, retention time.Duration) *time.Time {
	if retention <= 0 {
		return nil
	}
	t := now.Add(-retention)
	return &t
}
