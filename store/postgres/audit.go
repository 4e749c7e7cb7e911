package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/caddy-air/caddy-air/store"
)

// Audit is the audit trail in the air_audit table. Its code only inserts
// and selects; a trigger (migration 00019) refuses updates and deletes.
type Audit struct {
	db *DB
}

// Append implements store.Audit.
func (a *Audit) Append(ctx context.Context, e store.AuditEntry) error {
	_, err := a.db.pool.Exec(ctx, `INSERT INTO air_audit
		(at_ns, id, at, actor, identity, via, client_ip, action, target_type, target_id, before, after)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
		e.Time.UnixNano(), e.ID, e.Time, e.Actor, e.Identity, e.Via, e.ClientIP, e.Action, e.TargetType, e.TargetID,
		jsonOrNil(e.Before), jsonOrNil(e.After))
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "23505" {
		return store.ErrExists
	}
	return err
}

// jsonOrNil returns b as a jsonb argument, nil (SQL NULL) when empty.
func jsonOrNil(b []byte) any {
	if len(b) == 0 {
		return nil
	}
	return string(b)
}

// auditPage is how many rows List reads per query.
const auditPage = 500

// List implements store.Audit: it reads pages of auditPage rows, newest
// first, until fn stops it or the rows run out.
func (a *Audit) List(ctx context.Context, q store.AuditQuery, fn func(store.AuditEntry, string) error) error {
	curNS, curID := int64(1<<63-1), ""
	if q.Before != "" {
		ns, id, err := store.ParseAuditCursor(q.Before)
		if err != nil {
			return err
		}
		curNS, curID = ns, id
	} else if !q.Until.IsZero() {
		curNS = q.Until.UnixNano()
	}
	since := int64(-1 << 63)
	if !q.Since.IsZero() {
		since = q.Since.UnixNano()
	}
	for {
		rows, err := a.db.pool.Query(ctx, `SELECT at_ns, id, actor, identity, via, client_ip, action, target_type, target_id,
				coalesce(before::text, ''), coalesce(after::text, '')
			FROM air_audit
			WHERE (at_ns < $1 OR (at_ns = $1 AND id < $2)) AND at_ns >= $3
				AND ($4 = '' OR actor = $4) AND ($5 = '' OR action = $5) AND ($6 = '' OR target_id = $6)
			ORDER BY at_ns DESC, id DESC LIMIT $7`,
			curNS, curID, since, q.Actor, q.Action, q.TargetID, auditPage)
		if err != nil {
			return err
		}
		var page []store.AuditEntry
		for rows.Next() {
			var e store.AuditEntry
			var ns int64
			var before, after string
			if err := rows.Scan(&ns, &e.ID, &e.Actor, &e.Identity, &e.Via, &e.ClientIP, &e.Action, &e.TargetType, &e.TargetID, &before, &after); err != nil {
				rows.Close()
				return err
			}
			e.Time = time.Unix(0, ns).UTC()
			if before != "" {
				e.Before = []byte(before)
			}
			if after != "" {
				e.After = []byte(after)
			}
			page = append(page, e)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		for _, e := range page {
			if !q.Until.IsZero() && !e.Time.Before(q.Until) {
				continue
			}
			if err := fn(e, store.AuditCursor(e.Time, e.ID)); errors.Is(err, store.ErrStop) {
				return nil
			} else if err != nil {
				return err
			}
		}
		if len(page) < auditPage {
			return nil
		}
		last := page[len(page)-1]
		curNS, curID = last.Time.UnixNano(), last.ID
	}
}

// Interface guard.
var _ store.Audit = (*Audit)(nil)
