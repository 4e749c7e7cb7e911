package postgres

import (
	"context"
	"errors"
	"math"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/caddy-air/caddy-air/store"
)

// RateLimits is the rate-limits repository: one row per bucket, updated
// by a single atomic statement per Take or Adjust, so buckets are shared
// exactly by every instance. Refills are computed from the callers' now:
// the error bound across instances is what their clocks disagree by, at
// the bucket's rate (a clock 100 ms ahead refills 100 ms of the window
// early, e.g. 1 request of an RPM limit of 600). Every Take is one round
// trip to the database.
type RateLimits struct {
	db *DB
}

// refill is the SQL of a bucket's level at $now: its stored level plus
// what the time since it was stored refilled ($3 units per $4 seconds),
// capped at $3. Time running backwards (another instance's clock ahead)
// refills nothing.
const refill = `LEAST($3::float8, b.level + GREATEST(0, extract(epoch FROM $5::timestamptz - b.at)) * $3::float8 / $4::float8)`

// Take implements store.RateLimits.
func (r *RateLimits) Take(ctx context.Context, key string, n, limit int64, window time.Duration, now time.Time) (time.Duration, error) {
	if limit <= 0 {
		return 0, nil
	}
	n = min(n, limit)
	secs := window.Seconds()
	var taken bool
	var level float64
	err := r.db.pool.QueryRow(ctx, `WITH up AS (
			INSERT INTO air_buckets AS b (key, level, at) VALUES ($1, $3::float8 - $2::float8, $5)
			ON CONFLICT (key) DO UPDATE SET level = `+refill+` - $2::float8, at = GREATEST(b.at, $5)
			WHERE `+refill+` >= $2::float8
			RETURNING level)
		SELECT true, level FROM up
		UNION ALL
		SELECT false, `+refill+` FROM air_buckets b WHERE key = $1 AND NOT EXISTS (SELECT 1 FROM up)`,
		key, float64(n), float64(limit), secs, now).Scan(&taken, &level)
	if errors.Is(err, pgx.ErrNoRows) {
		// The bucket appeared and was drained between the two reads of the
		// statement; try again later.
		return time.Millisecond, nil
	}
	if err != nil || taken {
		return 0, err
	}
	wait := time.Duration(math.Ceil((float64(n) - level) * secs / float64(limit) * float64(time.Second)))
	return max(wait, time.Nanosecond), nil
}

// Adjust implements store.RateLimits.
func (r *RateLimits) Adjust(ctx context.Context, key string, n, limit int64, window time.Duration, now time.Time) error {
	if limit <= 0 || n == 0 {
		return nil
	}
	_, err := r.db.pool.Exec(ctx, `INSERT INTO air_buckets AS b (key, level, at) VALUES ($1, LEAST($3::float8, $3::float8 + $2::float8), $5)
		ON CONFLICT (key) DO UPDATE SET level = LEAST($3::float8, `+refill+` + $2::float8), at = GREATEST(b.at, $5)`,
		key, float64(n), float64(limit), window.Seconds(), now)
	return err
}

// Interface guard.
var _ store.RateLimits = (*RateLimits)(nil)
