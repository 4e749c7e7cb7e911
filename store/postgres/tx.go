package postgres

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// maxTxAttempts bounds the attempts of a transaction that keeps meeting
// deadlocks or serialization failures.
const maxTxAttempts = 5

// retryTx runs fn in a transaction and commits it, again from the start
// when PostgreSQL aborted it for a deadlock or a serialization failure
// (fn must have no effect outside the transaction).
func retryTx(ctx context.Context, db *DB, fn func(pgx.Tx) error) error {
	for attempt := 1; ; attempt++ {
		err := pgx.BeginFunc(ctx, db.pool, fn)
		if err == nil || attempt >= maxTxAttempts || !retryable(err) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Duration(attempt) * 5 * time.Millisecond):
		}
	}
}

// retryable reports whether err aborted a transaction that may succeed
// when run again: a deadlock or a serialization failure.
func retryable(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == "40P01" || pe.Code == "40001")
}

// newID returns a random id of 16 bytes in hex.
func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
