package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/caddy-air/caddy-air/store"
)

// Responses is the response-id repository. A pending mapping has a due
// time; ClaimDue selects due ones with FOR UPDATE SKIP LOCKED and moves
// their due time to the end of the lease in the same statement, so
// concurrent claims from any number of instances never return an id twice
// within a lease, and a claim never waits for another. Expiry is by the
// callers' clocks for claims and by the database's for reads.
type Responses struct {
	db *DB
}

// Put implements store.Responses.
func (r *Responses) Put(ctx context.Context, id string, value []byte, ttl time.Duration) error {
	return r.put(ctx, id, value, ttl, nil)
}

// PutPending implements store.Responses.
func (r *Responses) PutPending(ctx context.Context, id string, value []byte, ttl time.Duration, due time.Time) error {
	return r.put(ctx, id, value, ttl, &due)
}

// put stores a mapping, pending when due is set.
func (r *Responses) put(ctx context.Context, id string, value []byte, ttl time.Duration, due *time.Time) error {
	_, err := r.db.pool.Exec(ctx, `INSERT INTO air_responses (id, value, expires, due) VALUES ($1, $2, now() + $3::interval, $4)
		ON CONFLICT (id) DO UPDATE SET value = EXCLUDED.value, expires = EXCLUDED.expires, due = EXCLUDED.due`, id, value, ttl, due)
	return err
}

// Get implements store.Responses.
func (r *Responses) Get(ctx context.Context, id string) ([]byte, error) {
	var v []byte
	err := r.db.pool.QueryRow(ctx, `SELECT value FROM air_responses WHERE id = $1 AND expires > now()`, id).Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, store.ErrNotFound
	}
	return v, err
}

// ClaimDue implements store.Responses.
func (r *Responses) ClaimDue(ctx context.Context, now time.Time, lease time.Duration, max int) ([]store.PendingResponse, error) {
	if max <= 0 {
		return nil, nil
	}
	rows, err := r.db.pool.Query(ctx, `UPDATE air_responses SET due = $2 WHERE id IN (
			SELECT id FROM air_responses WHERE due <= $1 AND expires > $1
			ORDER BY due LIMIT $3 FOR UPDATE SKIP LOCKED)
		RETURNING id, value, due`, now, now.Add(lease), max)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []store.PendingResponse
	for rows.Next() {
		var p store.PendingResponse
		if err := rows.Scan(&p.ID, &p.Value, &p.Due); err != nil {
			return nil, err
		}
		p.Due = p.Due.UTC()
		out = append(out, p)
	}
	return out, rows.Err()
}

// Reschedule implements store.Responses.
func (r *Responses) Reschedule(ctx context.Context, id string, due time.Time) (bool, error) {
	tag, err := r.db.pool.Exec(ctx, `UPDATE air_responses SET due = $2 WHERE id = $1 AND due IS NOT NULL AND expires > now()`, id, due)
	if err != nil {
		return false, err
	}
	return tag.RowsAffected() == 1, nil
}

// Interface guard.
var _ store.Responses = (*Responses)(nil)
