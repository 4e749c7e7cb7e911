package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"go.uber.org/zap"

	"github.com/caddy-air/caddy-air/store"
)

// revokeChannel is the NOTIFY channel of key revocations; the payload is
// the revoked key's hash.
const revokeChannel = "air_key_revoked"

// Keys is the keys repository. A key created through any instance is in
// the table once Create returns. Revocations are sent with NOTIFY in the
// revoking transaction, so every instance listening hears of them when it
// commits; an instance whose listening connection broke re-reads the
// revocations it may have missed when it reconnects, and reconnects
// within a second.
type Keys struct {
	db *DB
}

const keyColumns = "id, hash, user_name, name, created_at, expires_at, revoked_at, models, last_used, coalesce(prev_hash, ''), prev_until, allow_ips, tags, log_requests"

// insertColumns are the columns Create writes.
const insertColumns = "id, hash, user_name, name, created_at, expires_at, revoked_at, models, last_used, allow_ips, tags"

func scanKey(row pgx.Row) (store.Key, error) {
	var k store.Key
	err := row.Scan(&k.ID, &k.Hash, &k.User, &k.Name, &k.CreatedAt, &k.ExpiresAt, &k.RevokedAt, &k.Models, &k.LastUsedAt, &k.PrevHash, &k.PrevUntil, &k.AllowIPs, &k.Tags, &k.LogRequests)
	if errors.Is(err, pgx.ErrNoRows) {
		return k, store.ErrNotFound
	}
	if len(k.Models) == 0 {
		k.Models = nil
	}
	if len(k.Tags) == 0 {
		k.Tags = nil
	}
	if len(k.AllowIPs) == 0 {
		k.AllowIPs = nil
	}
	k.PrevUntil = utcPtr(k.PrevUntil)
	k.LastUsedAt = utcPtr(k.LastUsedAt)
	k.CreatedAt = k.CreatedAt.UTC()
	k.ExpiresAt = utcPtr(k.ExpiresAt)
	k.RevokedAt = utcPtr(k.RevokedAt)
	return k, err
}

func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

// Create implements store.Keys.
func (r *Keys) Create(ctx context.Context, k store.Key) error {
	_, err := r.db.pool.Exec(ctx, `INSERT INTO air_keys (`+insertColumns+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
		k.ID, k.Hash, k.User, k.Name, k.CreatedAt, k.ExpiresAt, k.RevokedAt, nonNilStrings(k.Models), k.LastUsedAt,
		nonNilStrings(k.AllowIPs), nonNilStrings(k.Tags))
	if isUniqueViolation(err) {
		return fmt.Errorf("key %s: %w", k.ID, store.ErrExists)
	}
	return err
}

// ByHash implements store.Keys: by hash, else by prev_hash (each a
// unique index).
func (r *Keys) ByHash(ctx context.Context, hash string) (store.Key, error) {
	return scanKey(r.db.pool.QueryRow(ctx, `(SELECT `+keyColumns+` FROM air_keys WHERE hash = $1)
		UNION ALL (SELECT `+keyColumns+` FROM air_keys WHERE prev_hash = $1) LIMIT 1`, hash))
}

// List implements store.Keys. A user's keys are one range of the index
// air_keys_user (user_name, created_at): the query has no alternative for
// an empty user (an OR), which a generic plan could not use the index for.
func (r *Keys) List(ctx context.Context, user string) ([]store.Key, error) {
	var rows pgx.Rows
	var err error
	if user == "" {
		rows, err = r.db.pool.Query(ctx, `SELECT `+keyColumns+` FROM air_keys ORDER BY created_at, id`)
	} else {
		rows, err = r.db.pool.Query(ctx, `SELECT `+keyColumns+` FROM air_keys WHERE user_name = $1 ORDER BY created_at, id`, user)
	}
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []store.Key
	for rows.Next() {
		k, err := scanKey(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, k)
	}
	return out, rows.Err()
}

// Revoke implements store.Keys. The first revocation sets revoked_at and
// notifies every instance in the same transaction.
func (r *Keys) Revoke(ctx context.Context, id string, at time.Time) (store.Key, error) {
	var out store.Key
	err := pgx.BeginFunc(ctx, r.db.pool, func(tx pgx.Tx) error {
		k, err := scanKey(tx.QueryRow(ctx, `UPDATE air_keys SET revoked_at = $2, revoked_seen = clock_timestamp()
			WHERE id = $1 AND revoked_at IS NULL RETURNING `+keyColumns, id, at.UTC()))
		if errors.Is(err, store.ErrNotFound) {
			// Unknown, or revoked before: the first time stays.
			out, err = scanKey(tx.QueryRow(ctx, `SELECT `+keyColumns+` FROM air_keys WHERE id = $1`, id))
			return err
		}
		if err != nil {
			return err
		}
		out = k
		_, err = tx.Exec(ctx, `SELECT pg_notify($1, $2)`, revokeChannel, k.Hash)
		return err
	})
	return out, err
}

// Update implements store.Keys. It sets revoked_seen, which marks a
// change every instance's cache must see (a revocation or an update), and
// notifies every instance in the same transaction; a listener that
// reconnects reads it again.
func (r *Keys) Update(ctx context.Context, id string, ch store.KeyChange) (store.Key, error) {
	var out store.Key
	err := pgx.BeginFunc(ctx, r.db.pool, func(tx pgx.Tx) error {
		k, err := scanKey(tx.QueryRow(ctx, `UPDATE air_keys SET name = $2, models = $3, expires_at = $4, allow_ips = $5, log_requests = $6,
				revoked_seen = clock_timestamp()
			WHERE id = $1 RETURNING `+keyColumns, id, ch.Name, nonNilStrings(ch.Models), utcPtr(ch.ExpiresAt), nonNilStrings(ch.AllowIPs), ch.LogRequests))
		if err != nil {
			return err
		}
		out = k
		return notifyKey(ctx, tx, k.Hash, k.PrevHash)
	})
	return out, err
}

// notifyKey tells every instance, when tx commits, that the keys with
// these hashes changed.
func notifyKey(ctx context.Context, tx pgx.Tx, hashes ...string) error {
	for _, h := range hashes {
		if h == "" {
			continue
		}
		if _, err := tx.Exec(ctx, `SELECT pg_notify($1, $2)`, revokeChannel, h); err != nil {
			return err
		}
	}
	return nil
}

// Regenerate implements store.Keys: one statement moves the key to its new
// hash and keeps (or drops) the previous one, marks the change for the
// listeners (revoked_seen) and notifies the key's former hashes.
func (r *Keys) Regenerate(ctx context.Context, id, hash string, prevUntil time.Time) (store.Key, error) {
	var out store.Key
	err := pgx.BeginFunc(ctx, r.db.pool, func(tx pgx.Tx) error {
		var old, former string
		err := tx.QueryRow(ctx, `SELECT hash, coalesce(prev_hash, '') FROM air_keys WHERE id = $1 FOR UPDATE`, id).Scan(&old, &former)
		if errors.Is(err, pgx.ErrNoRows) {
			return store.ErrNotFound
		}
		if err != nil {
			return err
		}
		k, err := scanKey(tx.QueryRow(ctx, `UPDATE air_keys SET hash = $2, prev_hash = $3, prev_until = $4, revoked_seen = clock_timestamp()
			WHERE id = $1 RETURNING `+keyColumns, id, hash, old, prevUntil.UTC()))
		if isUniqueViolation(err) {
			return fmt.Errorf("key hash: %w", store.ErrExists)
		}
		if err != nil {
			return err
		}
		out = k
		return notifyKey(ctx, tx, old, former)
	})
	return out, err
}

// nonNilStrings returns s, or an empty slice for nil (a NOT NULL array).
func nonNilStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// Touch implements store.Keys: one statement moves every key's last use
// forward.
func (r *Keys) Touch(ctx context.Context, used map[string]time.Time) error {
	if len(used) == 0 {
		return nil
	}
	ids, ats := make([]string, 0, len(used)), make([]time.Time, 0, len(used))
	for id, at := range used {
		ids, ats = append(ids, id), append(ats, at.UTC())
	}
	_, err := r.db.pool.Exec(ctx, `UPDATE air_keys k SET last_used = u.at
		FROM unnest($1::text[], $2::timestamptz[]) AS u(id, at)
		WHERE k.id = u.id AND (k.last_used IS NULL OR k.last_used < u.at)`, ids, ats)
	return err
}

// Revocations implements store.Keys: it listens on a connection of its own
// until ctx ends, reconnecting after a second when it breaks. The first
// LISTEN is in place when Revocations returns (unless the database is
// unreachable, then it is retried), so a revocation committed after the
// call is reported.
func (r *Keys) Revocations(ctx context.Context, fn func(hash string)) {
	l := &listener{keys: r, fn: fn}
	startCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	err := l.connect(startCtx)
	cancel()
	go l.run(ctx, err)
}

// listener reports revocations to fn.
type listener struct {
	keys *Keys
	fn   func(hash string)
	conn *pgx.Conn
	// since is the database time of the last LISTEN: after a reconnect,
	// revocations committed from then on are read again (reporting one
	// twice is harmless).
	since time.Time
}

// connect takes a connection out of the pool for good (it ends in LISTEN
// state), listens, and reports the revocations it may have missed since
// the previous LISTEN.
func (l *listener) connect(ctx context.Context) error {
	conn, err := l.keys.db.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	pc := conn.Hijack()
	var now time.Time
	if _, err := pc.Exec(ctx, "LISTEN "+revokeChannel); err == nil {
		err = pc.QueryRow(ctx, "SELECT clock_timestamp()").Scan(&now)
	}
	if err != nil {
		_ = pc.Close(context.Background())
		return err
	}
	if !l.since.IsZero() {
		// A second of overlap covers a transaction that took its time
		// between setting revoked_seen and committing.
		// A regenerated key's previous hash is reported too; its older
		// hashes were reported when it changed.
		rows, err := pc.Query(ctx, `SELECT hash FROM air_keys WHERE revoked_seen >= $1
			UNION ALL SELECT prev_hash FROM air_keys WHERE revoked_seen >= $1 AND prev_hash IS NOT NULL`, l.since.Add(-time.Second))
		if err != nil {
			_ = pc.Close(context.Background())
			return err
		}
		hashes, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			_ = pc.Close(context.Background())
			return err
		}
		for _, h := range hashes {
			l.fn(h)
		}
	}
	l.conn, l.since = pc, now
	return nil
}

// run waits for notifications until ctx ends, reconnecting after a second
// when the connection fails; err is the first connect's.
func (l *listener) run(ctx context.Context, err error) {
	for {
		if err == nil {
			for {
				var n *pgconn.Notification
				n, err = l.conn.WaitForNotification(ctx)
				if err != nil {
					break
				}
				l.fn(n.Payload)
			}
			_ = l.conn.Close(context.Background())
			l.conn = nil
		}
		if ctx.Err() != nil {
			return
		}
		l.keys.db.log.Warn("listening for key revocations failed; retrying in 1s", zap.Error(err))
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
		err = l.connect(ctx)
	}
}

func isUniqueViolation(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "23505"
}

// Interface guard.
var _ store.Keys = (*Keys)(nil)
