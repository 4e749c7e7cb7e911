package console

import (
	"cmp"
	"fmt"
	"net/http"
	"slices"

	"github.com/caddy-air/caddy-air/billing"
)

// spendData is the operators' spend page's data: usage across every
// user, by model, key, user, team and tag.
type spendData struct {
	Filter                 usageFilter
	ByUser, ByModel, ByKey *billing.Report
	// ByTeam and ByTag are summed from the ledger's records (the
	// aggregates know neither); their charts show cost by day.
	ByTeam, ByTag               *billing.Report
	TeamCostChart, TagCostChart *chart
	// Cost and token charts by day, split by model, by key and by user.
	ModelCostChart, ModelTokenChart *chart
	KeyCostChart, KeyTokenChart     *chart
	UserCostChart, UserTokenChart   *chart
}

// chartedUsers is how many users the spend page charts one by one; the
// others share one series.
const chartedUsers = 7

// othersSeries names the series of the users not charted one by one.
const othersSeries = "(other users)"

// spendPage charts spend and usage across every user: the reports of
// `caddy air usage` without --user, for the range of the filter.
func (h *Handler) spendPage(w http.ResponseWriter, r *http.Request) {
	if h.cfg.Services.Usage == nil {
		h.fail(w, r, http.StatusNotFound, "usage is not served here")
		return
	}
	f, msg := h.parseUsageFilter(r)
	if msg == "" && f.until.After(f.since.AddDate(0, 0, maxUsageDays-1)) {
		msg = fmt.Sprintf("the range is longer than %d days: choose a shorter one", maxUsageDays)
	}
	empty := &billing.Report{}
	if msg != "" {
		h.renderMsg(w, r, http.StatusBadRequest, "spend", "Spend", spendData{Filter: f, ByUser: empty, ByModel: empty, ByKey: empty, ByTeam: empty, ByTag: empty}, msg)
		return
	}
	flt := billing.ReportFilter{Model: f.Model, KeyID: f.Key, Since: f.since, Until: f.until}
	reps, err := h.cfg.Services.Usage.Reports(r.Context(), flt,
		billing.ByDayModel, billing.ByDayKey, billing.ByUser, billing.ByModel, billing.ByKey, billing.ByDay)
	if err != nil {
		h.internal(w, r, "reading usage", err)
		return
	}
	d := spendData{Filter: f, ByUser: reps[2], ByModel: reps[3], ByKey: reps[4]}
	d.ModelCostChart, d.ModelTokenChart = usageCharts(reps[0], f.since, f.until, seriesModel)
	d.KeyCostChart, d.KeyTokenChart = usageCharts(reps[1], f.since, f.until, seriesKey)
	byDayUser, err := h.dayUserReport(r, flt, reps[2], reps[5])
	if err != nil {
		h.internal(w, r, "reading usage", err)
		return
	}
	d.UserCostChart, d.UserTokenChart = usageCharts(byDayUser, f.since, f.until, seriesUser)
	// One read of the records for the four reports by team and tag.
	tt, err := h.cfg.Services.Usage.Reports(r.Context(), flt, billing.ByDayTeam, billing.ByDayTag, billing.ByTeam, billing.ByTag)
	if err != nil {
		h.internal(w, r, "reading usage by team and tag", err)
		return
	}
	d.ByTeam, d.ByTag = tt[2], tt[3]
	d.TeamCostChart, _ = usageCharts(tt[0], f.since, f.until, seriesTeam)
	d.TagCostChart, _ = usageCharts(tt[1], f.since, f.until, seriesTag)
	h.render(w, r, http.StatusOK, "spend", "Spend", d)
}

// dayUserReport builds a report by day and user for the top spenders of
// byUser (one read each, at most chartedUsers), with the other users'
// usage, byDay less theirs, as one more series.
func (h *Handler) dayUserReport(r *http.Request, flt billing.ReportFilter, byUser, byDay *billing.Report) (*billing.Report, error) {
	type spender struct {
		user string
		cost billing.Amount
	}
	var top []spender
	for _, row := range byUser.Rows {
		i := slices.IndexFunc(top, func(s spender) bool { return s.user == row.User })
		if i < 0 {
			top = append(top, spender{user: row.User})
			i = len(top) - 1
		}
		top[i].cost += row.Cost
	}
	slices.SortStableFunc(top, func(a, b spender) int { return cmp.Compare(b.cost, a.cost) })
	out := &billing.Report{Totals: byDay.Totals}
	others := map[string]*billing.ReportRow{} // by day and currency
	for _, row := range byDay.Rows {
		row.User = othersSeries
		others[row.Day+"\x00"+row.Currency] = &row
	}
	for i, s := range top {
		if i == chartedUsers && len(top) > chartedUsers+1 {
			break
		}
		f := flt
		f.User = s.user
		reps, err := h.cfg.Services.Usage.Reports(r.Context(), f, billing.ByDay)
		if err != nil {
			return nil, err
		}
		for _, row := range reps[0].Rows {
			row.User = s.user
			out.Rows = append(out.Rows, row)
			if o := others[row.Day+"\x00"+row.Currency]; o != nil {
				o.Cost -= row.Cost
				// The chart shows a row's total tokens only.
				o.Usage = billing.Usage{Input: o.Usage.Total() - row.Usage.Total()}
			}
		}
	}
	if len(top) > chartedUsers+1 {
		for _, o := range others {
			out.Rows = append(out.Rows, *o)
		}
	}
	return out, nil
}
