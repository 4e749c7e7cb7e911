package billing

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/caddy-air/caddy-air/store"
)

// UserUsage is one user's requests and spend over a period.
type UserUsage struct {
	// User is the user.
	User string `json:"user"`
	// Requests counts the user's requests, priced or not.
	Requests int64 `json:"requests"`
	// Unpriced counts the requests of unpriced models, which have no cost.
	Unpriced int64 `json:"unpriced"`
	// Usage sums the tokens of every request.
	Usage Usage `json:"usage"`
	// Spend is the cost per currency of the priced requests, largest
	// first; empty when every request was unpriced.
	Spend []CurrencyAmount `json:"spend"`
}

// CurrencyAmount is an amount in a currency.
type CurrencyAmount struct {
	// Currency names the currency.
	Currency string `json:"currency"`
	// Amount is the amount, exactly.
	Amount Amount `json:"amount"`
}

// Users lists every user who made requests in month (as 2006-01, UTC),
// top spenders first: by their largest spend in any currency, then by
// requests, then by name. It reads each user's totals of the month
// (store.Ledger.MonthTotals), never the records or the days.
func (l *Ledger) Users(ctx context.Context, month string) ([]UserUsage, error) {
	if _, err := time.Parse(monthLayout, month); err != nil {
		return nil, fmt.Errorf("bad month %q: want YYYY-MM", month)
	}
	byUser := map[string]*UserUsage{}
	var out []*UserUsage
	err := l.repo.MonthTotals(ctx, month, func(ut store.UserTotals) error {
		u := byUser[ut.User]
		if u == nil {
			u = &UserUsage{User: ut.User, Spend: []CurrencyAmount{}}
			byUser[ut.User] = u
			out = append(out, u)
		}
		u.Requests = store.AddSat(u.Requests, ut.Requests)
		u.Unpriced = store.AddSat(u.Unpriced, ut.Unpriced)
		u.Usage = u.Usage.Add(Usage(ut.Usage))
		if ut.Currency != "" {
			u.Spend = append(u.Spend, CurrencyAmount{Currency: ut.Currency, Amount: Amount(ut.Cost)})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	top := func(u *UserUsage) Amount {
		var m Amount
		for _, s := range u.Spend {
			m = max(m, s.Amount)
		}
		return m
	}
	for _, u := range out {
		sort.Slice(u.Spend, func(i, j int) bool { return u.Spend[i].Amount > u.Spend[j].Amount })
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if ta, tb := top(a), top(b); ta != tb {
			return ta > tb
		}
		if a.Requests != b.Requests {
			return a.Requests > b.Requests
		}
		return a.User < b.User
	})
	list := make([]UserUsage, len(out))
	for i, u := range out {
		list[i] = *u
	}
	return list, nil
}
