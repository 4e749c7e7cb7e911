package alerts

import (
	"context"
	"fmt"
	"math/bits"
	"strconv"
	"sync"
	"time"

	"github.com/caddy-air/caddy-air/store"
)

// Thresholds are the shares of a spend limit, in percent, whose crossing
// raises a KindBudget event.
var Thresholds = []int64{50, 80, 100}

// BudgetUse is a subject's spend against one of its limits in a period.
type BudgetUse struct {
	// Scope is the subject's scope (key, user, team, …): any scope the
	// store keeps is watched alike.
	Scope string
	// ID is the subject's id in its scope.
	ID string
	// Period is a month ("2026-11") or "total".
	Period string
	// Currency is the limit's currency.
	Currency string
	// Spent and Limit are in nanos; Limit is positive.
	Spent, Limit int64
}

// BudgetWatcher raises each threshold crossing once per subject, limit
// and period. The event's id is derived from those, so that two
// instances (or one after a restart) seeing the same crossing raise the
// same event, which the outbox delivers once.
type BudgetWatcher struct {
	mu    sync.Mutex
	fired map[string]bool
}

// Check returns the events of the thresholds that uses have crossed and
// that this watcher has not returned before.
func (w *BudgetWatcher) Check(uses []BudgetUse, now time.Time) []Event {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.fired == nil {
		w.fired = map[string]bool{}
	}
	var out []Event
	for _, u := range uses {
		if u.Limit <= 0 {
			continue
		}
		for _, t := range Thresholds {
			if !reached(u.Spent, u.Limit, t) {
				break
			}
			th := strconv.FormatInt(t, 10)
			id := DedupeID(KindBudget, u.Scope, u.ID, u.Period, u.Currency, th)
			if w.fired[id] {
				continue
			}
			w.fired[id] = true
			out = append(out, Event{ID: id, Kind: KindBudget, At: now.UTC(),
				Message: fmt.Sprintf("%s %s has spent %s%% of its %s limit (%s)", u.Scope, u.ID, th, periodName(u.Period), u.Currency),
				Data: map[string]string{"scope": u.Scope, "id": u.ID, "period": u.Period, "currency": u.Currency, "threshold": th,
					"spent_nanos": strconv.FormatInt(u.Spent, 10), "limit_nanos": strconv.FormatInt(u.Limit, 10)}})
		}
	}
	return out
}

// reached reports whether spent*100 >= limit*pct, exactly (128-bit
// products: nanos of large limits overflow int64 when multiplied).
func reached(spent, limit, pct int64) bool {
	if spent <= 0 {
		return false
	}
	ah, al := bits.Mul64(uint64(spent), 100)
	bh, bl := bits.Mul64(uint64(limit), uint64(pct))
	return ah > bh || ah == bh && al >= bl
}

// periodName is how a message names a period's limit.
func periodName(p string) string {
	if p == store.PeriodTotal {
		return "total"
	}
	return "monthly (" + p + ")"
}

// BudgetUses reads every subject's spend against its monthly limit (the
// month of now) and its total limit from r. A limit without a currency
// is in def, the price table's default.
func BudgetUses(ctx context.Context, r store.Budgets, now time.Time, def string) ([]BudgetUse, error) {
	type lk struct {
		s      store.Subject
		period string
		cur    string
	}
	limits := map[lk]int64{}
	month := store.MonthOf(now)
	err := r.Limits(ctx, func(s store.Subject, l store.Limits) error {
		cur := l.Currency
		if cur == "" {
			cur = def
		}
		if l.Monthly > 0 {
			limits[lk{s, month, cur}] = l.Monthly
		}
		if l.Total > 0 {
			limits[lk{s, store.PeriodTotal, cur}] = l.Total
		}
		return nil
	})
	if err != nil || len(limits) == 0 {
		return nil, err
	}
	spent := map[lk]int64{}
	err = r.Spend(ctx, func(sp store.Spend) error {
		k := lk{sp.Subject, sp.Period, sp.Currency}
		if _, ok := limits[k]; ok {
			spent[k] += sp.Amount
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := make([]BudgetUse, 0, len(limits))
	for k, lim := range limits {
		out = append(out, BudgetUse{Scope: string(k.s.Scope), ID: k.s.ID, Period: k.period, Currency: k.cur, Spent: spent[k], Limit: lim})
	}
	return out, nil
}
