package console

import (
	"fmt"
	"net/http"

	"github.com/caddy-air/caddy-air/billing"
)

// spendData is the operators' spend page's data: usage across every
// user, by model, key and user.
type spendData struct {
	Filter                 usageFilter
	ByUser, ByModel, ByKey *billing.Report
	// Cost and token charts by day, split by model and by key.
	ModelCostChart, ModelTokenChart *chart
	KeyCostChart, KeyTokenChart     *chart
}

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
		h.renderMsg(w, r, http.StatusBadRequest, "spend", "Spend", spendData{Filter: f, ByUser: empty, ByModel: empty, ByKey: empty}, msg)
		return
	}
	reps, err := h.cfg.Services.Usage.Reports(r.Context(), billing.ReportFilter{Model: f.Model, KeyID: f.Key, Since: f.since, Until: f.until},
		billing.ByDayModel, billing.ByDayKey, billing.ByUser, billing.ByModel, billing.ByKey)
	if err != nil {
		h.internal(w, r, "reading usage", err)
		return
	}
	d := spendData{Filter: f, ByUser: reps[2], ByModel: reps[3], ByKey: reps[4]}
	d.ModelCostChart, d.ModelTokenChart = usageCharts(reps[0], f.since, f.until, seriesModel)
	d.KeyCostChart, d.KeyTokenChart = usageCharts(reps[1], f.since, f.until, seriesKey)
	h.render(w, r, http.StatusOK, "spend", "Spend", d)
}
