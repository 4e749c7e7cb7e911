package badger

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/caddy-air/caddy-air/store"
)

// spendMonthTTL keeps a monthly spend counter past the end of its month.
const spendMonthTTL = 93 * 24 * time.Hour

// addSpend adds rec's cost to the spend counters it counts in, by key,
// saturating at the largest int64 (store.AddSat).
func addSpend(spend map[string]int64, rec *store.Record) {
	if !rec.Priced || rec.Cost == 0 {
		return
	}
	month := store.MonthOf(rec.Time)
	for _, sub := range [...]store.Subject{{Scope: store.ScopeUser, ID: rec.User}, {Scope: store.ScopeKey, ID: rec.KeyID}, {Scope: store.ScopeTeam, ID: rec.Team}} {
		if sub.ID == "" {
			continue
		}
		for _, k := range [...]string{string(spendKey(sub, rec.Currency, month)), string(spendKey(sub, rec.Currency, store.PeriodTotal))} {
			spend[k] = store.AddSat(spend[k], rec.Cost)
		}
	}
}

// mergeAggregate adds t to the aggregate stored under key, and reports
// whether it created the aggregate.
func mergeAggregate(txn Txn, key []byte, t *store.Totals) (bool, error) {
	old, err := txn.Get(key)
	created := errors.Is(err, store.ErrNotFound)
	switch {
	case err == nil:
		cur, err := decodeTotals(old)
		if err != nil {
			return false, fmt.Errorf("decoding aggregate %s: %w", key, err)
		}
		cur.Merge(t)
		t = &cur
	case !created:
		return false, err
	}
	val, err := encodeTotals(t)
	if err != nil {
		return false, err
	}
	return created, txn.Set(key, val, 0)
}

// addSpendCounter adds amt to the spend counter stored under key,
// saturating at the bounds of int64 (store.AddSat).
func addSpendCounter(txn Txn, key []byte, amt int64) error {
	old, err := txn.Get(key)
	switch {
	case err == nil:
		n, err := strconv.ParseInt(string(old), 10, 64)
		if err != nil {
			return fmt.Errorf("decoding spend counter %s: %w", key, err)
		}
		amt = store.AddSat(n, amt)
	case !errors.Is(err, store.ErrNotFound):
		return err
	}
	var ttl time.Duration
	if !isTotalKey(key) {
		ttl = spendMonthTTL
	}
	return txn.Set(key, strconv.AppendInt(nil, amt, 10), ttl)
}

// isTotalKey reports whether a spend key is of the all-time period.
func isTotalKey(key []byte) bool {
	n := len(store.PeriodTotal)
	return len(key) >= n && string(key[len(key)-n:]) == store.PeriodTotal
}
