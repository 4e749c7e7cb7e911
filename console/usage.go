package console

import (
	"encoding/csv"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/caddy-air/caddy-air/billing"
)

// Usage page defaults and bounds.
const (
	defaultUsageDays = 30
	ledgerPageSize   = 50
	dayLayout        = "2006-01-02"
)

// usageFilter is the usage page's form.
type usageFilter struct {
	Since, Until        string
	Model, Key, Outcome string
	Page                int
	since, until        time.Time
}

// query returns the filter as URL parameters, without the page.
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
	CostChart  *chart
	TokenChart *chart
	Ledger     LedgerPage
	PrevPage   string
	NextPage   string
	CSV        string
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
	if p, err := strconv.Atoi(q.Get("page")); err == nil && p > 1 {
		f.Page = p
	} else {
		f.Page = 1
	}
	return f, ""
}

// report reads the user's report for f: the one `caddy air usage --user`
// prints for the same range.
func (h *Handler) report(r *http.Request, f usageFilter) (*billing.Report, error) {
	return h.cfg.Services.Usage.Report(r.Context(), billing.ReportFilter{
		User: userOf(r), Model: f.Model, KeyID: f.Key, Since: f.since, Until: f.until,
	})
}

func (h *Handler) usagePage(w http.ResponseWriter, r *http.Request) {
	if h.cfg.Services.Usage == nil {
		h.fail(w, r, http.StatusNotFound, "usage is not served here")
		return
	}
	f, msg := h.parseUsageFilter(r)
	if msg != "" {
		h.renderMsg(w, r, http.StatusBadRequest, "usage", "Usage", usageData{Filter: f, Report: &billing.Report{}}, msg)
		return
	}
	rep, err := h.report(r, f)
	if err != nil {
		h.internal(w, r, "reading usage", err)
		return
	}
	page, err := h.cfg.Services.Usage.Records(r.Context(), LedgerQuery{
		User: userOf(r), Since: f.since, Until: f.until.AddDate(0, 0, 1),
		Model: f.Model, KeyID: f.Key, Outcome: f.Outcome,
		Offset: (f.Page - 1) * ledgerPageSize, Limit: ledgerPageSize,
	})
	if err != nil {
		h.internal(w, r, "reading the ledger", err)
		return
	}
	d := usageData{Filter: f, Report: rep, Ledger: page}
	d.CostChart, d.TokenChart = usageCharts(rep, f.since, f.until)
	q := f.query()
	d.CSV = h.cfg.Prefix + "/usage.csv?" + q.Encode()
	if f.Page > 1 {
		q.Set("page", strconv.Itoa(f.Page-1))
		d.PrevPage = h.cfg.Prefix + "/usage?" + q.Encode()
	}
	if page.More {
		q.Set("page", strconv.Itoa(f.Page+1))
		d.NextPage = h.cfg.Prefix + "/usage?" + q.Encode()
	}
	h.render(w, r, http.StatusOK, "usage", "Usage", d)
}

// usageCSV exports the report's rows, the figures of the page's table.
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
	rep, err := h.report(r, f)
	if err != nil {
		h.internal(w, r, "reading usage", err)
		return
	}
	w.Header().Set("Content-Type", "text/csv; charset=utf-8")
	w.Header().Set("Content-Disposition", `attachment; filename="usage-`+f.Since+`-`+f.Until+`.csv"`)
	cw := csv.NewWriter(w)
	_ = cw.Write([]string{"day", "model", "requests", "input", "cache_write", "cache_write_1h", "cache_read", "output", "reasoning", "images", "video_ms", "unpriced", "cost", "currency"})
	i64 := func(n int64) string { return strconv.FormatInt(n, 10) }
	for _, row := range rep.Rows {
		u := row.Usage
		_ = cw.Write([]string{row.Day, csvSafe(row.Model), i64(row.Requests), i64(u.Input), i64(u.CacheCreation), i64(u.CacheCreation1h),
			i64(u.CacheRead), i64(u.Output), i64(u.Reasoning), i64(row.Images), i64(row.VideoMillis), i64(row.Unpriced), row.Cost.String(), row.Currency})
	}
	cw.Flush()
}

// csvSafe keeps a spreadsheet from reading a cell as a formula.
func csvSafe(s string) string {
	if s != "" && strings.ContainsRune("=+-@\t\r", rune(s[0])) {
		return "'" + s
	}
	return s
}
