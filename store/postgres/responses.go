package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/caddy-air/caddy-air/store"
)

// Responses is the response-id repository.
type Responses struct {
	db *DB
}

// Put implements store.Responses.
func (r *Responses) Put(ctx context.Context, id string, value []byte, ttl time.Duration) error {
	_, err := r.db.pool.Exec(ctx, `INSERT INTO air_responses (id, value, expires) VALUES ($1, $2, now() + $3::interval)
		ON CONFLICT (id) DO UPDATE SET value = EXCLUDED.value, expires = EXCLUDED.expires`, id, value, ttl)
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

// Interface guard.
var _ store.Responses = (*Responses)(nil)
