package billing

import (
	"context"
	"slices"
	"sort"
	"time"

	"github.com/caddy-air/caddy-air/store"
)

// reportsFromRecords is Reports summed from the ledger's records instead
// of its aggregates, which know neither teams nor tags: it reads every
// record of the filter's days (within the retention) once. The totals
// count each record once, also when it counts in several rows (a record
// with several tags, grouped by tag).
func (l *Ledger) reportsFromRecords(ctx context.Context, f ReportFilter, by []GroupBy, groups []map[aggKey]*ReportRow) ([]*Report, error) {
	var since, until time.Time
	if !f.Since.IsZero() {
		since = f.Since.UTC().Truncate(24 * time.Hour)
	}
	if !f.Until.IsZero() {
		until = f.Until.UTC().Truncate(24 * time.Hour).Add(24 * time.Hour)
	}
	totals := map[string]*ReportTotal{}
	noTag := []string{""}
	err := l.Records(ctx, since, until, func(rec Record) error {
		if f.User != "" && rec.User != f.User || f.KeyID != "" && rec.KeyID != f.KeyID ||
			f.Model != "" && rec.Model != f.Model || f.Team != "" && rec.Team != f.Team ||
			f.Tag != "" && !slices.Contains(rec.Tags, f.Tag) {
			return nil
		}
		sr := rec.toStore()
		var st store.Totals
		st.Add(&sr)
		t := totalsFromStore(&st)
		ak := store.KeyOf(&sr)
		for i, g := range by {
			byTag := g == ByTag || g == ByDayTag
			tags := noTag
			if byTag && len(rec.Tags) > 0 {
				tags = rec.Tags
			}
			for _, tag := range tags {
				rk := g.key(&ak)
				if g == ByTeam || g == ByDayTeam {
					rk.team = rec.Team
				}
				if byTag {
					rk.tag = tag
				}
				row := groups[i][rk]
				if row == nil {
					row = &ReportRow{Day: rk.day, Model: rk.model, KeyID: rk.key, User: rk.user, Team: rk.team, Tag: rk.tag,
						Currency: rec.Currency, Priced: rec.Currency != ""}
					groups[i][rk] = row
				}
				row.merge(&t)
			}
		}
		tot := totals[rec.Currency]
		if tot == nil {
			tot = &ReportTotal{Currency: rec.Currency, Priced: rec.Currency != ""}
			totals[rec.Currency] = tot
		}
		tot.merge(&t)
		return nil
	})
	if err != nil {
		return nil, err
	}
	sum := make([]ReportTotal, 0, len(totals))
	for _, t := range totals {
		sum = append(sum, *t)
	}
	sort.Slice(sum, func(i, j int) bool { return sum[i].Currency < sum[j].Currency })
	reps := make([]*Report, len(by))
	for i := range groups {
		reps[i] = buildReport(groups[i])
		reps[i].Totals = sum
	}
	return reps, nil
}
