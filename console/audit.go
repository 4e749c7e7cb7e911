package console

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/caddy-air/caddy-air/audit"
	"github.com/caddy-air/caddy-air/store"
)

// AuditService reads the audit trail for the operators' audit page: the
// trail behind GET /air/audit and `caddy air audit`.
type AuditService interface {
	// Trail returns a page of the entries q selects, newest first. A bad
	// cursor wraps ErrInvalid.
	Trail(ctx context.Context, q audit.Query) (*audit.Page, error)
	// ExportTrail writes every entry q selects to w as CSV or JSONL
	// (audit.FormatCSV, audit.FormatJSONL).
	ExportTrail(ctx context.Context, q store.AuditQuery, format string, w io.Writer) error
}

// auditShown is the audit page's page size.
const auditShown = 100

// auditData is the audit page's data.
type auditData struct {
	// Actor, Action, Target and Since are the filters as typed.
	Actor, Action, Target, Since string
	// Entries are the page's entries.
	Entries []store.AuditEntry
	// Next is the address of the next (older) page, "" on the last.
	Next string
	// Query is the filters as a query string, for the export links.
	Query string
}

// auditFilter reads the page's filters; since is a date.
func auditFilter(r *http.Request) (auditData, audit.Query, string) {
	q := r.URL.Query()
	v := func(name string) string { return strings.TrimSpace(q.Get(name)) }
	d := auditData{Actor: v("actor"), Action: v("action"), Target: v("target"), Since: v("since")}
	aq := audit.Query{Limit: auditShown}
	aq.Actor, aq.Action, aq.TargetID, aq.Before = d.Actor, d.Action, d.Target, v("before")
	if d.Since != "" {
		t, err := time.Parse("2006-01-02", d.Since)
		if err != nil {
			return d, aq, "since: want a date such as 2026-11-01"
		}
		aq.Since = t
	}
	f := url.Values{}
	for k, s := range map[string]string{"actor": d.Actor, "action": d.Action, "target": d.Target, "since": d.Since} {
		if s != "" {
			f.Set(k, s)
		}
	}
	d.Query = f.Encode()
	return d, aq, ""
}

// auditPage lists the audit trail, newest first, filtered by actor,
// action, target and day.
func (h *Handler) auditPage(w http.ResponseWriter, r *http.Request) {
	d, q, msg := auditFilter(r)
	if msg != "" {
		h.renderMsg(w, r, http.StatusBadRequest, "audit", "Audit trail", d, msg)
		return
	}
	p, err := h.cfg.Services.Audit.Trail(r.Context(), q)
	if errors.Is(err, ErrInvalid) {
		h.renderMsg(w, r, http.StatusBadRequest, "audit", "Audit trail", d, err.Error())
		return
	}
	if err != nil {
		h.internal(w, r, "reading the audit trail", err)
		return
	}
	d.Entries = p.Entries
	if p.Next != "" {
		f, _ := url.ParseQuery(d.Query)
		f.Set("before", p.Next)
		d.Next = h.cfg.Prefix + "/operators/audit?" + f.Encode()
	}
	h.render(w, r, http.StatusOK, "audit", "Audit trail", d)
}

// auditExport exports the entries the page's filters select as CSV or
// JSONL.
func (h *Handler) auditExport(format string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		_, q, msg := auditFilter(r)
		if msg != "" {
			h.fail(w, r, http.StatusBadRequest, msg)
			return
		}
		ct := "text/csv; charset=utf-8"
		if format == audit.FormatJSONL {
			ct = "application/jsonl"
		}
		w.Header().Set("Content-Type", ct)
		w.Header().Set("Content-Disposition", `attachment; filename="audit.`+format+`"`)
		if err := h.cfg.Services.Audit.ExportTrail(r.Context(), q.AuditQuery, format, w); err != nil {
			h.cfg.Logger.Error("console: exporting the audit trail", zap.Error(err))
		}
	}
}
