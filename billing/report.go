package billing

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	"github.com/tidwall/sjson"

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
	// Team keeps only the requests of this team's members (the team of
	// their user when they were made).
	Team string `json:"team,omitempty"`
	// Tag keeps only the requests that carry this tag.
	Tag string `json:"tag,omitempty"`
	// Since is the first day (UTC) to include; zero: from the beginning.
	Since time.Time `json:"since,omitzero"`
	// Until is the last day (UTC) to include, inclusive; zero: up to today.
	Until time.Time `json:"until,omitzero"`
	// By groups the rows by one dimension: day, model, key, user, team
	// or tag; "" groups them by day and model, "day-key" by day and key.
	// Reports by team or tag, and reports filtered by Team or Tag, are
	// summed from the ledger's records (reportrecords.go), so they cover
	// the records' retention only.
	By GroupBy `json:"by,omitempty"`
}

// GroupBy is the dimension a report's rows are grouped by.
type GroupBy string

// Dimensions of a report.
const (
	ByDayModel GroupBy = ""
	ByDay      GroupBy = "day"
	ByModel    GroupBy = "model"
	ByKey      GroupBy = "key"
	ByUser     GroupBy = "user"
	ByDayKey   GroupBy = "day-key"
	// ByTeam groups by the team of the requests' users ("" for none).
	ByTeam GroupBy = "team"
	// ByTag groups by tag: a request with several tags counts in each of
	// their rows, one without any in the row of tag "".
	ByTag GroupBy = "tag"
	// ByDayTeam and ByDayTag group by day and team, and by day and tag.
	ByDayTeam GroupBy = "day-team"
	ByDayTag  GroupBy = "day-tag"
)

// ParseGroupBy parses a report dimension: day, model, key, user, team,
// tag, day-key, day-team or day-tag ("" is day and model).
func ParseGroupBy(s string) (GroupBy, error) {
	switch g := GroupBy(s); g {
	case ByDayModel, ByDay, ByModel, ByKey, ByUser, ByDayKey, ByTeam, ByTag, ByDayTeam, ByDayTag:
		return g, nil
	}
	return "", fmt.Errorf("unknown grouping %q: use day, model, key, user, team, tag, day-key, day-team or day-tag", s)
}

// Report is the usage and cost of a filter's requests, by day and model
// or by the filter's By.
type Report struct {
	// Rows are sorted by day, model, key, user, team, tag and currency
	// (the dimensions that are set).
	Rows []ReportRow `json:"rows"`
	// Totals sums the rows per currency, sorted by currency; requests of
	// unpriced models are under currency "".
	Totals []ReportTotal `json:"totals"`
}

// ReportRow sums the requests of one group (a day and model, or one day,
// model, key or user) in one currency. Requests of unpriced models are
// a row of their own, with Priced false; in JSON its cost and currency
// are null, never a zero cost.
type ReportRow struct {
	// Day is the UTC day, as 2006-01-02, when the rows are by day.
	Day string `json:"day,omitempty"`
	// Model is the model id, when the rows are by model.
	Model string `json:"model,omitempty"`
	// KeyID is the API key's id, when the rows are by key.
	KeyID string `json:"key_id,omitempty"`
	// User is the user, when the rows are by user.
	User string `json:"user,omitempty"`
	// Team is the team, when the rows are by team ("" for users of no
	// team).
	Team string `json:"team,omitempty"`
	// Tag is the tag, when the rows are by tag ("" for untagged requests).
	Tag string `json:"tag,omitempty"`
	// Currency is the currency of Cost ("" for unpriced models).
	Currency string `json:"currency"`
	// Priced is false for the requests of unpriced models, which have no
	// cost.
	Priced bool `json:"priced"`
	Totals
}

// MarshalJSON encodes r with a null cost and currency when unpriced.
func (r ReportRow) MarshalJSON() ([]byte, error) {
	type plain ReportRow
	return unpricedJSON(plain(r), r.Priced)
}

// ReportTotal sums a report's rows of one currency.
type ReportTotal struct {
	// Currency is the currency of Cost ("" for unpriced models).
	Currency string `json:"currency"`
	// Priced is false for the total of unpriced models' requests.
	Priced bool `json:"priced"`
	Totals
}

// MarshalJSON encodes t with a null cost and currency when unpriced.
func (t ReportTotal) MarshalJSON() ([]byte, error) {
	type plain ReportTotal
	return unpricedJSON(plain(t), t.Priced)
}

// unpricedJSON encodes v, nulling its cost and currency unless priced.
func unpricedJSON(v any, priced bool) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil || priced {
		return b, err
	}
	if b, err = sjson.SetRawBytes(b, "cost", []byte("null")); err != nil {
		return nil, err
	}
	return sjson.SetRawBytes(b, "currency", []byte("null"))
}

// Report sums the aggregates selected by f. Aggregates are per UTC day, so
// Since and Until select whole days. Records enqueued but not yet written
// are not included; Flush first to include them.
func (l *Ledger) Report(ctx context.Context, f ReportFilter) (*Report, error) {
	reps, err := l.Reports(ctx, f, f.By)
	if err != nil {
		return nil, err
	}
	return reps[0], nil
}

// Reports is Report for each grouping of by (f.By is not used), from one
// read of the aggregates: a page that shows usage several ways reads them
// once.
func (l *Ledger) Reports(ctx context.Context, f ReportFilter, by ...GroupBy) ([]*Report, error) {
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
	groups := make([]map[aggKey]*ReportRow, len(by))
	fromRecords := f.Team != "" || f.Tag != ""
	for i, g := range by {
		if _, err := ParseGroupBy(string(g)); err != nil {
			return nil, err
		}
		groups[i] = map[aggKey]*ReportRow{}
		fromRecords = fromRecords || g.fromRecords()
	}
	if fromRecords {
		return l.reportsFromRecords(ctx, f, by, groups)
	}
	err := l.repo.Usage(ctx, uf, func(a store.Aggregate) error {
		t := totalsFromStore(&a.Totals)
		for i, g := range by {
			rk := g.key(&a.AggregateKey)
			row := groups[i][rk]
			if row == nil {
				row = &ReportRow{Day: rk.day, Model: rk.model, KeyID: rk.key, User: rk.user, Currency: a.Currency, Priced: a.Currency != ""}
				groups[i][rk] = row
			}
			row.merge(&t)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	reps := make([]*Report, len(by))
	for i := range groups {
		reps[i] = buildReport(groups[i])
	}
	return reps, nil
}

// fromRecords reports whether g is summed from the ledger's records.
func (g GroupBy) fromRecords() bool {
	return g == ByTeam || g == ByTag || g == ByDayTeam || g == ByDayTag
}

// aggKey identifies a row of a report: the dimensions it groups by, and
// a currency.
type aggKey struct {
	day, model, key, user, team, tag, currency string
}

// key is the row that aggregate a counts in.
func (g GroupBy) key(a *store.AggregateKey) aggKey {
	k := aggKey{currency: a.Currency}
	switch g {
	case ByDayModel:
		k.day, k.model = a.Day, a.Model
	case ByDay:
		k.day = a.Day
	case ByModel:
		k.model = a.Model
	case ByKey:
		k.key = a.KeyID
	case ByUser:
		k.user = a.User
	case ByDayKey:
		k.day, k.key = a.Day, a.KeyID
	case ByDayTeam, ByDayTag:
		k.day = a.Day
	}
	return k
}

// buildReport sorts rows and sums them per currency.
func buildReport(rows map[aggKey]*ReportRow) *Report {
	r := &Report{Rows: make([]ReportRow, 0, len(rows)), Totals: []ReportTotal{}}
	totals := map[string]*ReportTotal{}
	for _, row := range rows {
		r.Rows = append(r.Rows, *row)
		t := totals[row.Currency]
		if t == nil {
			t = &ReportTotal{Currency: row.Currency, Priced: row.Priced}
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
		if a.KeyID != b.KeyID {
			return a.KeyID < b.KeyID
		}
		if a.User != b.User {
			return a.User < b.User
		}
		if a.Team != b.Team {
			return a.Team < b.Team
		}
		if a.Tag != b.Tag {
			return a.Tag < b.Tag
		}
		return a.Currency < b.Currency
	})
	for _, t := range totals {
		r.Totals = append(r.Totals, *t)
	}
	sort.Slice(r.Totals, func(i, j int) bool { return r.Totals[i].Currency < r.Totals[j].Currency })
	return r
}
