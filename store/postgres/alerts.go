package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/caddy-air/caddy-air/store"
)

// alertRetention is how long raised alerts are kept for the console and
// for dedupe: an event raised again within it is not delivered again.
const alertRetention = 90 * 24 * time.Hour

// Alerts is the alerts outbox. Claim takes pending deliveries with
// SELECT … FOR UPDATE SKIP LOCKED and leases them to the claiming
// instance until the lease's end on the database's clock, so that two
// instances never hold one delivery at once; a delivery whose holder died
// is claimed again once its lease ran out.
type Alerts struct {
	db *DB
}

// Add implements store.Alerts.
func (a *Alerts) Add(ctx context.Context, e store.AlertEvent, targets []string) (bool, error) {
	added := false
	err := retryTx(ctx, a.db, func(tx pgx.Tx) error {
		added = false
		if _, err := tx.Exec(ctx, `DELETE FROM air_alert_events WHERE at < $1`, time.Now().Add(-alertRetention)); err != nil {
			return err
		}
		data := e.Data
		if data == nil {
			data = map[string]string{}
		}
		tag, err := tx.Exec(ctx, `INSERT INTO air_alert_events (id, kind, at, message, data) VALUES ($1, $2, $3, $4, $5)
			ON CONFLICT (id) DO NOTHING`, e.ID, e.Kind, e.At, e.Message, data)
		if err != nil || tag.RowsAffected() == 0 {
			return err
		}
		added = true
		if len(targets) == 0 {
			_, err = tx.Exec(ctx, `INSERT INTO air_alert_deliveries (event_id, target, state) VALUES ($1, '', $2)`, e.ID, store.AlertNone)
			return err
		}
		for _, t := range targets {
			if _, err := tx.Exec(ctx, `INSERT INTO air_alert_deliveries (event_id, target, state) VALUES ($1, $2, $3)
				ON CONFLICT DO NOTHING`, e.ID, t, store.AlertPending); err != nil {
				return err
			}
		}
		return nil
	})
	return added, err
}

// deliveryColumns are what scanDelivery reads, from d (deliveries) and e
// (events).
const deliveryColumns = `e.id, e.kind, e.at, e.message, e.data, d.target, d.state, d.attempts, d.last_error, d.done_at`

// scanDelivery reads a row of deliveryColumns.
func scanDelivery(rows pgx.CollectableRow) (store.AlertDelivery, error) {
	var d store.AlertDelivery
	err := rows.Scan(&d.Event.ID, &d.Event.Kind, &d.Event.At, &d.Event.Message, &d.Event.Data, &d.Target, &d.State, &d.Attempts, &d.LastError, &d.DoneAt)
	if len(d.Event.Data) == 0 {
		d.Event.Data = nil
	}
	d.Event.At = d.Event.At.UTC()
	return d, err
}

// Claim implements store.Alerts.
func (a *Alerts) Claim(ctx context.Context, owner string, lease time.Duration, n int) ([]store.AlertDelivery, error) {
	rows, err := a.db.pool.Query(ctx, `WITH c AS (
			SELECT d.event_id, d.target FROM air_alert_deliveries d JOIN air_alert_events e ON e.id = d.event_id
			WHERE d.state = 'pending' AND (d.lease_until IS NULL OR d.lease_until < now())
			ORDER BY e.seq LIMIT $3 FOR UPDATE OF d SKIP LOCKED
		), u AS (
			UPDATE air_alert_deliveries d SET lease_owner = $1, lease_until = now() + $2::bigint * interval '1 millisecond'
			FROM c WHERE d.event_id = c.event_id AND d.target = c.target
			RETURNING d.*
		)
		SELECT `+deliveryColumns+` FROM u d JOIN air_alert_events e ON e.id = d.event_id ORDER BY e.seq`,
		owner, lease.Milliseconds(), n)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, scanDelivery)
}

// Finish implements store.Alerts.
func (a *Alerts) Finish(ctx context.Context, owner, id, target, state string, attempts int, lastErr string) error {
	_, err := a.db.pool.Exec(ctx, `UPDATE air_alert_deliveries SET state = $4, attempts = attempts + $5, last_error = $6,
			done_at = now(), lease_owner = NULL, lease_until = NULL
		WHERE event_id = $2 AND target = $3 AND lease_owner = $1 AND state = 'pending'`,
		owner, id, target, state, attempts, lastErr)
	return err
}

// Recent implements store.Alerts.
func (a *Alerts) Recent(ctx context.Context, n int) ([]store.AlertDelivery, error) {
	rows, err := a.db.pool.Query(ctx, `SELECT `+deliveryColumns+`
		FROM (SELECT * FROM air_alert_events ORDER BY seq DESC LIMIT $1) e
		JOIN air_alert_deliveries d ON d.event_id = e.id ORDER BY e.seq DESC, d.target`, n)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, scanDelivery)
}

// Interface guard.
var _ store.Alerts = (*Alerts)(nil)
