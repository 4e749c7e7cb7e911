package admin

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/caddy-air/caddy-air/billing"
)

// recordQuery reads a billing.RecordQuery from the parameters user, key,
// model, outcome, since, until, after, limit and order (asc, the default,
// or desc: newest first).
func recordQuery(q url.Values) (billing.RecordQuery, error) {
	rq := billing.RecordQuery{User: q.Get("user"), KeyID: q.Get("key"), Model: q.Get("model"), Outcome: q.Get("outcome"), After: q.Get("after")}
	switch q.Get("order") {
	case "", "asc":
	case "desc":
		rq.Desc = true
	default:
		return rq, fmt.Errorf("bad order %q: want asc or desc", q.Get("order"))
	}
	var err error
	if rq.Since, rq.Until, err = parseRange(q); err != nil {
		return rq, err
	}
	if s := q.Get("limit"); s != "" {
		if rq.Limit, err = strconv.Atoi(s); err != nil || rq.Limit < 1 || rq.Limit > billing.MaxPage {
			return rq, fmt.Errorf("bad limit %q: want 1 to %d", s, billing.MaxPage)
		}
	}
	return rq, nil
}

// handleRecords serves GET /air/records?user=…: a page of one user's
// ledger records ({"records","has_more","next"}), or with format=csv every
// matching record as CSV. Without a user it searches every user's records
// (RecordService.SearchRecords).
func (a API) handleRecords(w http.ResponseWriter, r *http.Request) error {
	s, err := a.readState(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	rq, err := recordQuery(q)
	if err != nil {
		return apiErr(http.StatusBadRequest, err)
	}
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	err = s.Ledger.Flush(ctx)
	cancel()
	if err != nil {
		return apiErr(http.StatusServiceUnavailable, err)
	}
	switch q.Get("format") {
	case "csv":
		w.Header().Set("Content-Type", "text/csv; charset=utf-8")
		w.Header().Set("Content-Disposition", `attachment; filename="ledger.csv"`)
		// Once rows are written the status is sent: a failure later ends
		// the body early, and is logged by the admin server.
		return s.Records.ExportRecordsCSV(r.Context(), rq, w)
	case "", "json":
		page, err := s.Records.SearchRecords(r.Context(), rq)
		if err != nil {
			return apiErr(http.StatusBadRequest, err)
		}
		return writeJSON(w, http.StatusOK, page)
	default:
		return apiErr(http.StatusBadRequest, fmt.Errorf("unknown format %q: use json or csv", q.Get("format")))
	}
}
