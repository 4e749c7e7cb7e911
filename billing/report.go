package billing

import (
	"context"
	"encoding/json"
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

// maxDayScans is the longest range that Report reads day by day; longer
// ranges scan every aggregate once.
const maxDayScans = 400

// Report sums the aggregates selected by f. Aggregates are per UTC day, so
// Since and Until select whole days. Records enqueued but not yet written
// are not included; Flush first to include them.
func (l *Ledger) Report(ctx context.Context, f ReportFilter) (*Report, error) {
	if !f.Since.IsZero() && !f.Until.IsZero() && f.Until.Before(f.Since) {
		return nil, fmt.Errorf("report: until (%s) is before since (%s)", f.Until.Format(dayLayout), f.Since.Format(dayLayout))
	}
	var from, to string
	if !f.Since.IsZero() {
		from = f.Since.UTC().Format(dayLayout)
	}
	if !f.Until.IsZero() {
		to = f.Until.UTC().Format(dayLayout)
	}
	rows := map[aggKey]*ReportRow{}
	visit := func(k, v []byte) error {
		ak, ok := parseAggKey(k)
		if !ok || ak.day < from {
			return nil
		}
		if to != "" && ak.day > to {
			return store.ErrStop
		}
		if f.User != "" && ak.user != f.User || f.KeyID != "" && ak.key != f.KeyID || f.Model != "" && ak.model != f.Model {
			return nil
		}
		var t Totals
		if err := json.Unmarshal(v, &t); err != nil {
			return fmt.Errorf("decoding aggregate %s: %w", k, err)
		}
		rk := aggKey{day: ak.day, model: ak.model, currency: ak.currency}
		row := rows[rk]
		if row == nil {
			row = &ReportRow{Day: ak.day, Model: ak.model, Currency: ak.currency}
			rows[rk] = row
		}
		row.merge(&t)
		return nil
	}
	if err := l.scanDays(ctx, f, visit); err != nil {
		return nil, err
	}
	return buildReport(rows), nil
}

// scanDays visits the aggregates of f's days: day by day when the range is
// bounded and short, else in one scan of all aggregates.
func (l *Ledger) scanDays(ctx context.Context, f ReportFilter, visit func(k, v []byte) error) error {
	if f.Since.IsZero() {
		return l.s.Scan(ctx, []byte(prefixAggregates), store.ScanOptions{}, visit)
	}
	until := f.Until
	if until.IsZero() {
		until = time.Now()
	}
	first := f.Since.UTC().Truncate(24 * time.Hour)
	last := until.UTC().Truncate(24 * time.Hour)
	if last.Sub(first) > maxDayScans*24*time.Hour {
		return l.s.Scan(ctx, []byte(prefixAggregates), store.ScanOptions{}, visit)
	}
	for d := first; !d.After(last); d = d.AddDate(0, 0, 1) {
		prefix := []byte(prefixAggregates + d.Format(dayLayout) + "/")
		if err := l.s.Scan(ctx, prefix, store.ScanOptions{}, visit); err != nil {
			return err
		}
	}
	return nil
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
