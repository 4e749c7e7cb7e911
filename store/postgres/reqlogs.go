package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/caddy-air/caddy-air/store"
)

// RequestLogs is store.RequestLogs in the air_request_logs table; the
// retention job (Sweep) deletes expired rows.
type RequestLogs struct {
	db *DB
}

// Put implements store.RequestLogs.
func (r *RequestLogs) Put(ctx context.Context, l store.RequestLog, ttl time.Duration) error {
	v, err := json.Marshal(l)
	if err != nil {
		return err
	}
	_, err = r.db.pool.Exec(ctx, `INSERT INTO air_request_logs (request_id, key_id, usr, team, at, expires, value)
		VALUES ($1, $2, $3, $4, $5, now() + $6::interval, $7)
		ON CONFLICT (request_id) DO UPDATE SET key_id = EXCLUDED.key_id, usr = EXCLUDED.usr, team = EXCLUDED.team,
			at = EXCLUDED.at, expires = EXCLUDED.expires, value = EXCLUDED.value`,
		l.RequestID, l.KeyID, l.User, l.Team, l.Time, ttl, string(v))
	return err
}

// Get implements store.RequestLogs.
func (r *RequestLogs) Get(ctx context.Context, id string) (store.RequestLog, error) {
	var l store.RequestLog
	var v []byte
	err := r.db.pool.QueryRow(ctx, `SELECT value FROM air_request_logs WHERE request_id = $1 AND expires > now()`, id).Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) {
		return l, store.ErrNotFound
	}
	if err != nil {
		return l, err
	}
	return l, json.Unmarshal(v, &l)
}

// Interface guard.
var _ store.RequestLogs = (*RequestLogs)(nil)
