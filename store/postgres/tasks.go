package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/caddy-air/caddy-air/store"
)

// Tasks is the tasks repository. ClaimDue selects due tasks with FOR
// UPDATE SKIP LOCKED and moves their Due to the end of the lease in the
// same statement, so concurrent claims from any number of instances never
// return a task twice within a lease, and a claim never waits for
// another. A task whose owner died is claimed again once its lease ends.
// Expiry is by the callers' clocks for claims and by the database's for
// reads.
type Tasks struct {
	db *DB
	// table is the table of the documents; "" is air_tasks (air_files
	// and air_batches keep files and batches the same way).
	table string
}

// name is r's table.
func (r *Tasks) name() string {
	if r.table == "" {
		return "air_tasks"
	}
	return r.table
}

const taskColumns = "id, user_name, created, expires, working, due, data"

func scanTask(row pgx.Row) (store.TaskRecord, error) {
	var t store.TaskRecord
	err := row.Scan(&t.ID, &t.User, &t.Created, &t.Expires, &t.Working, &t.Due, &t.Data)
	if errors.Is(err, pgx.ErrNoRows) {
		return t, store.ErrNotFound
	}
	t.Created, t.Expires, t.Due = t.Created.UTC(), t.Expires.UTC(), t.Due.UTC()
	return t, err
}

func collectTasks(rows pgx.Rows, err error) ([]store.TaskRecord, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []store.TaskRecord
	for rows.Next() {
		t, err := scanTask(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

// Insert implements store.Tasks.
func (r *Tasks) Insert(ctx context.Context, t store.TaskRecord) error {
	_, err := r.db.pool.Exec(ctx, `INSERT INTO `+r.name()+` (`+taskColumns+`) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
		t.ID, t.User, t.Created, t.Expires, t.Working, t.Due, t.Data)
	if isUniqueViolation(err) {
		return fmt.Errorf("task %s: %w", t.ID, store.ErrExists)
	}
	return err
}

// Get implements store.Tasks.
func (r *Tasks) Get(ctx context.Context, id string) (store.TaskRecord, error) {
	return scanTask(r.db.pool.QueryRow(ctx, `SELECT `+taskColumns+` FROM `+r.name()+` WHERE id = $1 AND expires > now()`, id))
}

// Update implements store.Tasks: the row is locked (FOR UPDATE) while fn
// runs, so fn runs once.
func (r *Tasks) Update(ctx context.Context, id string, fn func(t *store.TaskRecord) (bool, error)) (store.TaskRecord, bool, error) {
	var out store.TaskRecord
	var changed bool
	err := retryTx(ctx, r.db, func(tx pgx.Tx) error {
		t, err := scanTask(tx.QueryRow(ctx, `SELECT `+taskColumns+` FROM `+r.name()+` WHERE id = $1 AND expires > now() FOR UPDATE`, id))
		if err != nil {
			return err
		}
		user := t.User
		if changed, err = fn(&t); err != nil || !changed {
			out = t
			return err
		}
		t.ID, t.User = id, user
		out = t
		_, err = tx.Exec(ctx, `UPDATE `+r.name()+` SET created = $2, expires = $3, working = $4, due = $5, data = $6 WHERE id = $1`,
			id, t.Created, t.Expires, t.Working, t.Due, t.Data)
		return err
	})
	if err != nil {
		return store.TaskRecord{}, false, err
	}
	return out, changed, nil
}

// ClaimDue implements store.Tasks.
func (r *Tasks) ClaimDue(ctx context.Context, now time.Time, lease time.Duration, max int) ([]store.TaskRecord, error) {
	if max <= 0 {
		return nil, nil
	}
	return collectTasks(r.db.pool.Query(ctx, `UPDATE `+r.name()+` SET due = $2 WHERE id IN (
			SELECT id FROM `+r.name()+` WHERE working AND due <= $1 AND expires > $1
			ORDER BY due LIMIT $3 FOR UPDATE SKIP LOCKED)
		RETURNING `+taskColumns, now, now.Add(lease), max))
}

// ListByUser implements store.Tasks. Ties on created, which keeps
// microseconds, are ordered by id in byte order (COLLATE "C"), as the
// cursor's comparison is.
func (r *Tasks) ListByUser(ctx context.Context, user string, after store.TaskCursor, limit int) ([]store.TaskRecord, error) {
	var createdArg *time.Time
	if !after.Created.IsZero() {
		// The column keeps microseconds, truncated from what Insert got.
		c := after.Created.Truncate(time.Microsecond)
		createdArg = &c
	}
	return collectTasks(r.db.pool.Query(ctx, `SELECT `+taskColumns+` FROM `+r.name()+`
		WHERE user_name = $1 AND expires > now()
			AND ($2::timestamptz IS NULL OR created < $2 OR (created = $2 AND $3 <> '' AND id COLLATE "C" > $3))
		ORDER BY created DESC, id COLLATE "C" LIMIT $4`, user, createdArg, after.ID, limit))
}

// Interface guard.
var _ store.Tasks = (*Tasks)(nil)
