package billing

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/caddy-air/caddy-air/store"
)

// ReportFilter selects the aggregates a report sums. Empty fields match
// everything.
type ReportFilter struct {
	// User keeps only this user's requests.
	User string `json:"user,omitempty"`
	// KeyID keeps only this API key's requests.
	KeyID string `json:"key_id,omitempty"`
	// Model keeps only this model's requests.
	Model string `json:"model,omitempty"`
	// Since is the first day (UTC) to include; zero: from the beginning.
	Since time.Time `json:"since,omitzero"`
	// Until is the last day (UTC) to include, inclusive; zero: up to today.
	Until time.Time `json:"until,omitzero"`
}

// Report is the usage and cost of a filter's requests by day and model.
type Report struct {
	// Rows are sorted by day, then model, then currency.
	Rows []ReportRow `json:"rows"`
	// Totals sums the rows per currency, sorted by currency; requests of
	// unpriced models are under currency "".
	Totals []ReportTotal `json:"totals"`
}

// ReportRow sums one day's requests of one model in one currency.
type ReportRow struct {
	// Day is the UTC day, as 2006-01-02.
	Day string `json:"day"`
	// Model is the model id.
	Model string `json:"model"`
	// Currency is the currency of Cost ("" for an unpriced model).
	Currency string `json:"currency"`
	Totals
}

// ReportTotal sums a report's rows of one currency.
type ReportTotal struct {
	// Currency is the currency of Cost ("" for unpriced models).
	Currency string `json:"currency"`
	Totals
}

// Report sums the aggregates selected by f. Aggregates are per UTC day, so
// Since and Until select whole days. Records enqueued but not yet written
// are not included; Flush first to include them.
func (l *Ledger) Report(ctx context.Context, f ReportFilter) (*Report, error) {
	if !f.Since.IsZero() && !f.Until.IsZero() && f.Until.Before(f.Since) {
		return nil, fmt.Errorf("report: until (%s) is before since (%s)", f.Until.Format(dayLayout), f.Since.Format(dayLayout))
	}
	uf := store.UsageFilter{User: f.User, KeyID: f.KeyID, Model: f.Model}
	if !f.Since.IsZero() {
		uf.Since = f.Since.UTC().Format(dayLayout)
	}
	if !f.Until.IsZero() {
		uf.Until = f.Until.UTC().Format(dayLayout)
	}
	rows := map[aggKey]*ReportRow{}
	err := l.repo.Usage(ctx, uf, func(a store.Aggregate) error {
		rk := aggKey{day: a.Day, model: a.Model, currency: a.Currency}
		row := rows[rk]
		if row == nil {
			row = &ReportRow{Day: a.Day, Model: a.Model, Currency: a.Currency}
			rows[rk] = row
		}
		t := totalsFromStore(&a.Totals)
		row.merge(&t)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return buildReport(rows), nil
}

// aggKey identifies a row of a report: a day, model and currency.
type aggKey struct {
	day, model, currency string
}

// buildReport sorts rows and sums them per currency.
func buildReport(rows map[aggKey]*ReportRow) *Report {
	r := &Report{Rows: make([]ReportRow, 0, len(rows)), Totals: []ReportTotal{}}
	totals := map[string]*ReportTotal{}
	for _, row := range rows {
		r.Rows = append(r.Rows, *row)
		t := totals[row.Currency]
		if t == nil {
			t = &ReportTotal{Currency: row.Currency}
			totals[row.Currency] = t
		}
		t.merge(&row.Totals)
	}
	sort.Slice(r.Rows, func(i, j int) bool {
		a, b := &r.Rows[i], &r.Rows[j]
		if a.Day != b.Day {
			return a.Day < b.Day
		}
		if a.Model != b.Model {
			return a.Model < b.Model
		}
		return a.Currency < b.Currency
	})
	for _, t := range totals {
		r.Totals = append(r.Totals, *t)
	}
	sort.Slice(r.Totals, func(i, j int) bool { return r.Totals[i].Currency < r.Totals[j].Currency })
	return r
}
