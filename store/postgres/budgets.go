package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/caddy-air/caddy-air/store"
)

// Budgets is the budgets repository. A Reserve locks its subject's limits
// row (SELECT … FOR UPDATE), so the Reserves of one subject, from any
// number of instances, run one after another and each sees the leases the
// others granted: together they never grant more than the room left. The
// spend counters they read are the Ledger's, committed with its records.
//
// Overspend bound: a budget's spend exceeds its limit by at most what the
// requests admitted under its unexpired leases cost beyond the leases'
// amounts (a request priced above its estimate); a lease of an instance
// that died stops counting when it expires, and holds no spend past then.
type Budgets struct {
	db *DB
}

// Limits implements store.Budgets.
func (b *Budgets) Limits(ctx context.Context, fn func(store.Subject, store.Limits) error) error {
	rows, err := b.db.pool.Query(ctx, `SELECT scope, subject, currency, monthly, total, rpm, tpm, max_parallel FROM air_limits ORDER BY scope, subject`)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var s store.Subject
		var l store.Limits
		if err := rows.Scan(&s.Scope, &s.ID, &l.Currency, &l.Monthly, &l.Total, &l.RPM, &l.TPM, &l.MaxParallel); err != nil {
			return err
		}
		if err := fn(s, l); err != nil {
			if errors.Is(err, store.ErrStop) {
				return nil
			}
			return err
		}
	}
	return rows.Err()
}

// SetLimits implements store.Budgets.
func (b *Budgets) SetLimits(ctx context.Context, s store.Subject, l store.Limits) error {
	_, err := b.db.pool.Exec(ctx, `INSERT INTO air_limits (scope, subject, currency, monthly, total, rpm, tpm, max_parallel)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
		ON CONFLICT (scope, subject) DO UPDATE SET currency = EXCLUDED.currency, monthly = EXCLUDED.monthly,
			total = EXCLUDED.total, rpm = EXCLUDED.rpm, tpm = EXCLUDED.tpm, max_parallel = EXCLUDED.max_parallel`,
		string(s.Scope), s.ID, l.Currency, l.Monthly, l.Total, l.RPM, l.TPM, l.MaxParallel)
	return err
}

// DeleteLimits implements store.Budgets.
func (b *Budgets) DeleteLimits(ctx context.Context, s store.Subject) error {
	_, err := b.db.pool.Exec(ctx, `DELETE FROM air_limits WHERE scope = $1 AND subject = $2`, string(s.Scope), s.ID)
	return err
}

// Spend implements store.Budgets.
func (b *Budgets) Spend(ctx context.Context, fn func(store.Spend) error) error {
	rows, err := b.db.pool.Query(ctx, `SELECT scope, subject, currency, period, amount FROM air_spend ORDER BY scope, subject, currency, period`)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var s store.Spend
		if err := rows.Scan(&s.Scope, &s.ID, &s.Currency, &s.Period, &s.Amount); err != nil {
			return err
		}
		if err := fn(s); err != nil {
			if errors.Is(err, store.ErrStop) {
				return nil
			}
			return err
		}
	}
	return rows.Err()
}

// Reserve implements store.Budgets.
func (b *Budgets) Reserve(ctx context.Context, s store.Subject, currency string, want int64, now time.Time, ttl time.Duration, rates ...store.Rate) (store.Lease, error) {
	lease := store.Lease{Subject: s, Currency: currency, Expires: now.Add(ttl)}
	if want <= 0 {
		return lease, nil
	}
	curs, nums, dens := make([]string, len(rates)), make([]string, len(rates)), make([]string, len(rates))
	for i, r := range rates {
		if _, ok := r.Convert(0); !ok {
			return store.Lease{}, fmt.Errorf("malformed rate %+v", r)
		}
		curs[i], nums[i], dens[i] = r.Currency, r.Num, r.Den
	}
	err := retryTx(ctx, b.db, func(tx pgx.Tx) error {
		lease.ID, lease.Amount = "", 0
		var lc string
		var monthly, total int64
		err := tx.QueryRow(ctx, `SELECT currency, monthly, total FROM air_limits WHERE scope = $1 AND subject = $2 FOR UPDATE`,
			string(s.Scope), s.ID).Scan(&lc, &monthly, &total)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			monthly, total = 0, 0
		case err != nil:
			return err
		}
		if lc != "" && lc != currency {
			monthly, total = 0, 0
		}
		grant := want
		if monthly > 0 || total > 0 {
			var reserved, spentMonth, spentTotal int64
			// Spend in other currencies counts converted, rounded up
			// exactly: div(a×num + den − 1, den) = ⌈a×num/den⌉ for a ≥ 0.
			err := tx.QueryRow(ctx, `WITH r(cur, num, den) AS (
					SELECT * FROM unnest($6::text[], $7::numeric[], $8::numeric[])
					UNION ALL SELECT $3, 1, 1),
				sp AS (
					SELECT s.period, div(greatest(s.amount, 0)::numeric * r.num + r.den - 1, r.den) AS amount
					FROM air_spend s JOIN r ON s.currency = r.cur
					WHERE s.scope = $1 AND s.subject = $2 AND s.period IN ($5, 'total'))
				SELECT
				(SELECT air_sat(coalesce(sum(amount), 0)) FROM air_leases WHERE scope = $1 AND subject = $2 AND currency = $3 AND expires > $4),
				(SELECT air_sat(coalesce(sum(amount), 0)) FROM sp WHERE period = $5),
				(SELECT air_sat(coalesce(sum(amount), 0)) FROM sp WHERE period = 'total')`,
				string(s.Scope), s.ID, currency, now, store.MonthOf(now), curs, nums, dens).Scan(&reserved, &spentMonth, &spentTotal)
			if err != nil {
				return err
			}
			// Saturating: a spend at the largest bigint leaves no room.
			if monthly > 0 {
				grant = min(grant, store.SubSat(monthly, store.AddSat(spentMonth, reserved)))
			}
			if total > 0 {
				grant = min(grant, store.SubSat(total, store.AddSat(spentTotal, reserved)))
			}
		}
		if grant <= 0 {
			return nil
		}
		lease.ID, lease.Amount = newID(), grant
		_, err = tx.Exec(ctx, `INSERT INTO air_leases (id, scope, subject, currency, amount, expires) VALUES ($1, $2, $3, $4, $5, $6)`,
			lease.ID, string(s.Scope), s.ID, currency, grant, lease.Expires)
		return err
	})
	if err != nil {
		return store.Lease{}, err
	}
	return lease, nil
}

// Extend implements store.Budgets. A lease counts as expired from its
// expiry by the database's clock.
func (b *Budgets) Extend(ctx context.Context, id string, until time.Time) error {
	tag, err := b.db.pool.Exec(ctx, `UPDATE air_leases SET expires = $2 WHERE id = $1 AND expires > now()`, id, until)
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return store.ErrNotFound
	}
	return nil
}

// Shrink implements store.Budgets.
func (b *Budgets) Shrink(ctx context.Context, id string, amount int64) error {
	_, err := b.db.pool.Exec(ctx, `UPDATE air_leases SET amount = greatest($2::bigint, 0) WHERE id = $1 AND amount > greatest($2::bigint, 0)`, id, amount)
	return err
}

// Release implements store.Budgets.
func (b *Budgets) Release(ctx context.Context, id string) error {
	_, err := b.db.pool.Exec(ctx, `DELETE FROM air_leases WHERE id = $1`, id)
	return err
}

// Reserved implements store.Budgets.
func (b *Budgets) Reserved(ctx context.Context, s store.Subject, currency string, now time.Time) (int64, error) {
	var n int64
	err := b.db.pool.QueryRow(ctx, `SELECT air_sat(coalesce(sum(amount), 0)) FROM air_leases
		WHERE scope = $1 AND subject = $2 AND currency = $3 AND expires > $4`, string(s.Scope), s.ID, currency, now).Scan(&n)
	return n, err
}

// Interface guard.
var _ store.Budgets = (*Budgets)(nil)
