package postgres

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/caddy-air/caddy-air/store"
)

// userRecordsFilter is the WHERE clause of a page of one user's records
// past the cursor's seq ($2), whose comparison is left to the order.
const userRecordsFilter = `SELECT ` + ledgerColumns + `, seq FROM air_ledger
		WHERE user_name = $1 AND ($3 = '' OR key_id = $3) AND ($4 = '' OR model = $4) AND ($5 = '' OR outcome = $5)
			AND ($6::timestamptz IS NULL OR ts >= $6) AND ($7::timestamptz IS NULL OR ts < $7)
			AND ($8::timestamptz IS NULL OR written >= $8)`

// userRecordsAsc and userRecordsDesc read a page oldest and newest first.
const (
	userRecordsAsc  = userRecordsFilter + ` AND seq > $2 ORDER BY user_name, seq LIMIT $9`
	userRecordsDesc = userRecordsFilter + ` AND seq < $2 ORDER BY user_name DESC, seq DESC LIMIT $9`
)

// UserRecords implements store.Ledger. A page is one query on the index
// (user_name, seq), starting at the cursor: the records' sequence
// number, so pages never skip or repeat a record.
func (l *Ledger) UserRecords(ctx context.Context, q store.RecordQuery) ([]store.Record, string, error) {
	if q.User == "" || q.Limit < 1 {
		return nil, "", fmt.Errorf("a page of records needs a user and a limit")
	}
	var after int64
	if q.After != "" {
		n, err := strconv.ParseInt(q.After, 10, 64)
		if err != nil || n < 0 {
			return nil, "", fmt.Errorf("bad cursor %q", q.After)
		}
		after = n
	}
	var since, until *time.Time
	if !q.Since.IsZero() {
		since = &q.Since
	}
	if !q.Until.IsZero() {
		until = &q.Until
	}
	cutoff := retentionCutoff(time.Now(), l.retention)
	// Newest first reads the same index backwards, below the cursor.
	order, bound := userRecordsAsc, after
	if q.Desc {
		order, bound = userRecordsDesc, math.MaxInt64
		if q.After != "" {
			bound = after
		}
	}
	rows, err := l.db.pool.Query(ctx, order,
		q.User, bound, q.KeyID, q.Model, q.Outcome, since, until, cutoff, q.Limit+1)
	if err != nil {
		return nil, "", err
	}
	defer rows.Close()
	var out []store.Record
	var seqs []int64
	for rows.Next() {
		var r store.Record
		var n recordInts
		var seq int64
		if err := rows.Scan(append(recordDest(&r, &n), &seq)...); err != nil {
			return nil, "", err
		}
		n.set(&r)
		out, seqs = append(out, r), append(seqs, seq)
	}
	if err := rows.Err(); err != nil {
		return nil, "", err
	}
	if len(out) <= q.Limit {
		return out, "", nil
	}
	return out[:q.Limit], strconv.FormatInt(seqs[q.Limit-1], 10), nil
}
