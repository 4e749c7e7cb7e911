package billing

import (
	"context"
	"fmt"
	"sort"
	"time"
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
// requests, then by name. It reads the daily aggregates, never the
// records.
func (l *Ledger) Users(ctx context.Context, month string) ([]UserUsage, error) {
	first, err := time.Parse(monthLayout, month)
	if err != nil {
		return nil, fmt.Errorf("bad month %q: want YYYY-MM", month)
	}
	rep, err := l.Report(ctx, ReportFilter{Since: first, Until: first.AddDate(0, 1, -1), By: ByUser})
	if err != nil {
		return nil, err
	}
	byUser := map[string]*UserUsage{}
	var out []*UserUsage
	for _, row := range rep.Rows {
		u := byUser[row.User]
		if u == nil {
			u = &UserUsage{User: row.User, Spend: []CurrencyAmount{}}
			byUser[row.User] = u
			out = append(out, u)
		}
		u.Requests += row.Requests
		u.Unpriced += row.Unpriced
		u.Usage = u.Usage.Add(row.Usage)
		if row.Priced {
			u.Spend = append(u.Spend, CurrencyAmount{Currency: row.Currency, Amount: row.Cost})
		}
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
