package admin

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/caddy-air/caddy-air/audit"
	"github.com/caddy-air/caddy-air/store"
)

// Page sizes of GET /air/audit.
const (
	// DefaultAuditPage is the page size without limit=.
	DefaultAuditPage = 100
	// MaxAuditPage is the largest limit=.
	MaxAuditPage = 1000
)

// AuditPage is the answer of GET /air/audit.
type AuditPage struct {
	// Entries are the page's entries, newest first.
	Entries []audit.JSONEntry `json:"entries"`
	// Next is the cursor of the next (older) page, for before=; absent
	// on the last page.
	Next string `json:"next,omitempty"`
}

// parseAuditWhen reads since or until: a date, an RFC 3339 time, or a
// duration before now such as "24h" or "7d".
func (a API) parseAuditWhen(s string, now time.Time) (time.Time, error) {
	if d, err := a.parseDuration(s); err == nil && s != "" {
		return now.Add(-d), nil
	}
	return parseWhen(s)
}

// auditQuery reads the filters of GET /air/audit.
func (a API) auditQuery(q url.Values) (audit.Query, error) {
	aq := audit.Query{Limit: DefaultAuditPage}
	aq.Actor, aq.Action, aq.TargetID, aq.Before = q.Get("actor"), q.Get("action"), q.Get("target"), q.Get("before")
	now := time.Now()
	var err error
	if aq.Since, err = a.parseAuditWhen(q.Get("since"), now); err != nil {
		return aq, err
	}
	if aq.Until, err = a.parseAuditWhen(q.Get("until"), now); err != nil {
		return aq, err
	}
	if aq.Before != "" {
		if _, _, err := store.ParseAuditCursor(aq.Before); err != nil {
			return aq, err
		}
	}
	if s := q.Get("limit"); s != "" {
		if aq.Limit, err = strconv.Atoi(s); err != nil || aq.Limit < 1 || aq.Limit > MaxAuditPage {
			return aq, fmt.Errorf("bad limit %q: want 1 to %d", s, MaxAuditPage)
		}
	}
	return aq, nil
}

// handleAudit answers GET /air/audit: a page of the audit trail, newest
// first, or with format=csv|jsonl every entry the filters select.
func (a API) handleAudit(w http.ResponseWriter, r *http.Request) error {
	s, err := a.readState(r)
	if err != nil {
		return err
	}
	q, err := a.auditQuery(r.URL.Query())
	if err != nil {
		return apiErr(http.StatusBadRequest, err)
	}
	switch f := r.URL.Query().Get("format"); f {
	case "":
	case audit.FormatCSV, audit.FormatJSONL:
		ct := "text/csv; charset=utf-8"
		if f == audit.FormatJSONL {
			ct = "application/jsonl"
		}
		w.Header().Set("Content-Type", ct)
		w.Header().Set("Content-Disposition", `attachment; filename="audit.`+f+`"`)
		// Once the first line is out, a failure can only cut the export short.
		return s.Audit.Export(r.Context(), q.AuditQuery, f, w)
	default:
		return apiErr(http.StatusBadRequest, fmt.Errorf("bad format %q: want csv or jsonl", f))
	}
	p, err := s.Audit.List(r.Context(), q)
	if err != nil {
		return apiErr(http.StatusInternalServerError, err)
	}
	return writeJSON(w, http.StatusOK, AuditPage{Entries: audit.JSONEntries(p.Entries), Next: p.Next})
}
