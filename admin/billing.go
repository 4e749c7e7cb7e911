package admin

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/caddy-air/caddy-air/billing"
	"github.com/caddy-air/caddy-air/console"
	"github.com/caddy-air/caddy-air/store"
)

// billingRoutes are the admin routes over the ledger and budgets:
//
//	GET /air/usage?by=&user=&key=&model=&team=&tag=&since=&until= → the usage report, by day and model or by one of day, model, key, user, team, tag
//	GET /air/users?month=YYYY-MM                        → users with requests and spend, top spenders first
//	GET /air/ledger?user=&key=&since=&until=&limit=&flush=1 → ledger records, in the order they were written
//	GET /air/records?user=&key=&model=&outcome=&since=&until=&limit=&after=[&format=csv] → a page of one user's records (every user's without user), or all as CSV
//	GET /air/budgets/                                   → every user, key and team with limits
//	PUT|GET|DELETE /air/budgets/<user|key|team>/<id>    → spend and rate limits
func (a API) billingRoutes() []Route {
	return []Route{
		{Pattern: "/air/usage", Handler: a.handleUsage},
		{Pattern: "/air/users", Handler: a.handleUsers},
		{Pattern: "/air/records", Handler: a.handleRecords},
		{Pattern: "/air/ledger", Handler: a.handleLedger},
		{Pattern: "/air/budgets/", Handler: a.handleBudget},
	}
}

// parseWhen reads a since/until parameter: RFC 3339 or a date.
func parseWhen(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	t, err := time.Parse("2006-01-02", s)
	if err != nil {
		return time.Time{}, fmt.Errorf("bad time %q: want YYYY-MM-DD or RFC 3339", s)
	}
	return t, nil
}

// parseRange reads the since and until parameters of q.
func parseRange(q url.Values) (since, until time.Time, err error) {
	if since, err = parseWhen(q.Get("since")); err != nil {
		return
	}
	until, err = parseWhen(q.Get("until"))
	return
}

func (a API) handleUsage(w http.ResponseWriter, r *http.Request) error {
	s, err := a.readState(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	f := billing.ReportFilter{User: q.Get("user"), KeyID: q.Get("key"), Model: q.Get("model"), Team: q.Get("team"), Tag: q.Get("tag")}
	if f.Since, f.Until, err = parseRange(q); err != nil {
		return apiErr(http.StatusBadRequest, err)
	}
	if f.By, err = billing.ParseGroupBy(q.Get("by")); err != nil {
		return apiErr(http.StatusBadRequest, err)
	}
	if err := s.Ledger.Flush(r.Context()); err != nil {
		return apiErr(http.StatusServiceUnavailable, err)
	}
	rep, err := s.Ledger.Report(r.Context(), f)
	if err != nil {
		return apiErr(http.StatusInternalServerError, err)
	}
	return writeJSON(w, http.StatusOK, rep)
}

func (a API) handleUsers(w http.ResponseWriter, r *http.Request) error {
	s, err := a.readState(r)
	if err != nil {
		return err
	}
	month := r.URL.Query().Get("month")
	if month == "" {
		month = store.MonthOf(time.Now())
	}
	if err := s.Ledger.Flush(r.Context()); err != nil {
		return apiErr(http.StatusServiceUnavailable, err)
	}
	users, err := s.Ledger.Users(r.Context(), month)
	if err != nil {
		return apiErr(http.StatusBadRequest, err)
	}
	if users == nil {
		users = []billing.UserUsage{}
	}
	return writeJSON(w, http.StatusOK, users)
}

func (a API) handleLedger(w http.ResponseWriter, r *http.Request) error {
	s, err := a.readState(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	since, until, err := parseRange(q)
	if err != nil {
		return apiErr(http.StatusBadRequest, err)
	}
	limit := 1000
	if v := q.Get("limit"); v != "" {
		if limit, err = strconv.Atoi(v); err != nil || limit < 1 {
			return apiErr(http.StatusBadRequest, fmt.Errorf("bad limit %q", v))
		}
	}
	if q.Get("flush") != "" {
		ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
		defer cancel()
		if err := s.Ledger.Flush(ctx); err != nil {
			return apiErr(http.StatusServiceUnavailable, err)
		}
	}
	user, keyID := q.Get("user"), q.Get("key")
	out := []billing.Record{}
	err = s.Ledger.Records(r.Context(), since, until, func(rec billing.Record) error {
		if (user != "" && rec.User != user) || (keyID != "" && rec.KeyID != keyID) {
			return nil
		}
		out = append(out, rec)
		if len(out) >= limit {
			return store.ErrStop
		}
		return nil
	})
	if err != nil {
		return apiErr(http.StatusInternalServerError, err)
	}
	return writeJSON(w, http.StatusOK, out)
}

// handleBudget serves /air/budgets/<user|key>/<id>: PUT sets the limits
// (billing.Limits as JSON), GET shows limits and spend, DELETE lifts them.
func (a API) handleBudget(w http.ResponseWriter, r *http.Request) error {
	s, err := a.started()
	if err != nil {
		return err
	}
	rest := strings.TrimPrefix(r.URL.Path, "/air/budgets/")
	if rest == "" {
		if r.Method != http.MethodGet {
			return notAllowed(r)
		}
		list, err := s.Budgets.Budgets(r.Context())
		if err != nil {
			return apiErr(http.StatusInternalServerError, err)
		}
		return writeJSON(w, http.StatusOK, list)
	}
	scopeName, id, ok := strings.Cut(rest, "/")
	scope, serr := billing.ParseScope(scopeName)
	if !ok || id == "" || serr != nil {
		return apiErr(http.StatusNotFound, fmt.Errorf("use /air/budgets/user/<user>, /air/budgets/key/<key id> or /air/budgets/team/<team>"))
	}
	switch r.Method {
	case http.MethodGet:
		return writeJSON(w, http.StatusOK, s.Budgets.Status(scope, id))
	case http.MethodPut, http.MethodPost:
		var lim billing.Limits
		if err := a.decodeBody(w, r, &lim, true, "limits"); err != nil {
			return err
		}
		if err := setLimits(r, s, scope, id, lim); err != nil {
			return err
		}
		return writeJSON(w, http.StatusOK, s.Budgets.Status(scope, id))
	case http.MethodDelete:
		if err := s.Budgets.DeleteBudget(r.Context(), scope, id); err != nil {
			return apiErr(http.StatusInternalServerError, err)
		}
		return writeJSON(w, http.StatusOK, s.Budgets.Status(scope, id))
	default:
		return notAllowed(r)
	}
}

// setLimits checks and sets the limits of id in scope, which the budget
// service records in the audit trail: limits it refuses are the
// request's fault (400).
func setLimits(r *http.Request, s *Services, scope billing.Scope, id string, lim billing.Limits) error {
	if err := s.Budgets.SetBudget(r.Context(), scope, id, lim); errors.Is(err, console.ErrInvalid) {
		return apiErr(http.StatusBadRequest, err)
	} else if err != nil {
		return apiErr(http.StatusInternalServerError, err)
	}
	return nil
}
