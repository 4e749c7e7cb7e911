package console

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"go.uber.org/zap"

	"github.com/caddy-air/caddy-air/billing"
	"github.com/caddy-air/caddy-air/refusals"
)

// Usage page defaults and bounds.
const (
	defaultUsageDays = 30
	// maxUsageDays is the longest range the usage page charts: a leap
	// year. Its charts draw one bar per day, so their size grows with the
	// range; a year is the longest range whose daily bars stay readable
	// (about two pixels each). Longer ranges are refused: the usage
	// report (GET /air/usage, caddy air usage) and the CSV export serve
	// them.
	maxUsageDays   = 366
	ledgerPageSize = 50
	dayLayout      = "2006-01-02"
)

// usageFilter is the usage page's form.
type usageFilter struct {
	Since, Until        string
	Model, Key, Outcome string
	// After is the ledger page's cursor ("" for the first page).
	After        string
	since, until time.Time
}

// query returns the filter as URL parameters, without the cursor.
func (f usageFilter) query() url.Values {
	q := url.Values{}
	for k, v := range map[string]string{"since": f.Since, "until": f.Until, "model": f.Model, "key": f.Key, "outcome": f.Outcome} {
		if v != "" {
			q.Set(k, v)
		}
	}
	return q
}

// usageData is the usage page's data.
type usageData struct {
	Filter     usageFilter
	Report     *billing.Report
	ByKey      *billing.Report
	CostChart  *chart
	TokenChart *chart
	// KeyCostChart and KeyTokenChart split the days by key.
	KeyCostChart  *chart
	KeyTokenChart *chart
	Ledger        *billing.RecordPage
	// Refused are the user's latest requests the gateway refused by
	// itself, which have no ledger record.
	Refused   []refusals.Entry
	FirstPage string
	NextPage  string
	CSV       string
}

// parseUsageFilter reads the page's parameters; the default range is the
// last 30 days (UTC).
func (h *Handler) parseUsageFilter(r *http.Request) (usageFilter, string) {
	q := r.URL.Query()
	f := usageFilter{Since: q.Get("since"), Until: q.Get("until"), Model: q.Get("model"), Key: q.Get("key"), Outcome: q.Get("outcome")}
	today := h.cfg.Now().UTC().Truncate(24 * time.Hour)
	f.until, f.since = today, today.AddDate(0, 0, 1-defaultUsageDays)
	var err error
	if f.Until != "" {
		if f.until, err = time.Parse(dayLayout, f.Until); err != nil {
			return f, "until must be a date (YYYY-MM-DD)"
		}
	}
	if f.Since != "" {
		if f.since, err = time.Parse(dayLayout, f.Since); err != nil {
			return f, "since must be a date (YYYY-MM-DD)"
		}
	} else if f.Until != "" {
		f.since = f.until.AddDate(0, 0, 1-defaultUsageDays)
	}
	if f.until.Before(f.since) {
		return f, "until is before since"
	}
	f.Since, f.Until = f.since.Format(dayLayout), f.until.Format(dayLayout)
	f.After = q.Get("after")
	return f, ""
}

// reports reads the user's reports for f, one for each grouping of by,
// in one read: each is the one `caddy air usage --user --by` prints for
// the same range.
func (h *Handler) reports(r *http.Request, f usageFilter, by ...billing.GroupBy) ([]*billing.Report, error) {
	return h.cfg.Services.Usage.Reports(r.Context(), billing.ReportFilter{
		User: userOf(r), Model: f.Model, KeyID: f.Key, Since: f.since, Until: f.until,
	}, by...)
}

// recordQuery selects the signed-in user's ledger records that f
// filters: the user is always the signed-in one.
func recordQuery(r *http.Request, f usageFilter) billing.RecordQuery {
	return billing.RecordQuery{
		User: userOf(r), Since: f.since, Until: f.until.AddDate(0, 0, 1),
		Model: f.Model, KeyID: f.Key, Outcome: f.Outcome, After: f.After, Limit: ledgerPageSize,
		Desc: true, // newest first; "More" pages toward older ones
	}
}

func (h *Handler) usagePage(w http.ResponseWriter, r *http.Request) {
	if h.cfg.Services.Usage == nil {
		h.fail(w, r, http.StatusNotFound, "usage is not served here")
		return
	}
	f, msg := h.parseUsageFilter(r)
	if msg == "" && f.until.After(f.since.AddDate(0, 0, maxUsageDays-1)) {
		msg = fmt.Sprintf("the range is longer than %d days: choose a shorter one (GET /air/usage and the CSV export serve longer ranges)", maxUsageDays)
	}
	if msg != "" {
		h.renderMsg(w, r, http.StatusBadRequest, "usage", "Usage", usageData{Filter: f, Report: &billing.Report{}}, msg)
		return
	}
	reps, err := h.reports(r, f, billing.ByDayModel, billing.ByKey, billing.ByDayKey)
	if err != nil {
		h.internal(w, r, "reading usage", err)
		return
	}
	rep, byKey, byDayKey := reps[0], reps[1], reps[2]
	page, err := h.cfg.Services.Usage.Records(r.Context(), recordQuery(r, f))
	if errors.Is(err, ErrInvalid) {
		h.fail(w, r, http.StatusBadRequest, "this page of requests does not exist: start again from the first page")
		return
	}
	if err != nil {
		h.internal(w, r, "reading the ledger", err)
		return
	}
	d := usageData{Filter: f, Report: rep, ByKey: byKey, Ledger: page, Refused: h.cfg.Services.Usage.Refused(userOf(r), 20)}
	d.CostChart, d.TokenChart = usageCharts(rep, f.since, f.until, seriesModel)
	d.KeyCostChart, d.KeyTokenChart = usageCharts(byDayKey, f.since, f.until, seriesKey)
	q := f.query()
	d.CSV = h.cfg.Prefix + "/usage.csv?" + q.Encode()
	if f.After != "" {
		d.FirstPage = h.cfg.Prefix + "/usage?" + q.Encode()
	}
	if page.HasMore {
		q.Set("after", page.Next)
		d.NextPage = h.cfg.Prefix + "/usage?" + q.Encode()
	}
	h.render(w, r, http.StatusOK, "usage", "Usage", d)
}

// usageCSV exports the ledger records behind the page, every one that
// its filters select (not only one page), as GET /air/records?format=csv
// writes them.
func (h *Handler) usageCSV(w http.ResponseWriter, r *http.Request) {
	if h.cfg.Services.Usage == nil {
		h.fail(w, r, http.StatusNotFound, "usage is not served here")
		return
	}
	f, msg := h.parseUsageFilter(r)
	if msg != "" {
		h.fail(w, r, http.StatusBadRequest, msg)
		return
	}
	q := recordQuery(r, f)
	q.After = ""
	w.Header().Set("Content-Type", "text/csv; charset=utf-8")
	w.Header().Set("Content-Disposition", `attachment; filename="requests-`+f.Since+`-`+f.Until+`.csv"`)
	if err := h.cfg.Services.Usage.ExportCSV(r.Context(), q, w); err != nil {
		// The header line is sent: the file ends short, and the log says
		// why.
		h.cfg.Logger.Error("console: exporting the ledger", zap.Error(err))
	}
}
