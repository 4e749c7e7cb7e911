package console

import (
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"go.uber.org/zap"

	"github.com/caddy-air/caddy-air/billing"
)

// operatorsData is the operators' page's data.
type operatorsData struct {
	Users     []UserSummary
	Budgets   []billing.BudgetEntry
	Prices    PriceView
	Providers []ProviderView
	// Form is the limits form, filled in to change a user's or key's
	// limits, or echoed after an error.
	Form budgetForm
}

// budgetForm is the limits form's fields.
type budgetForm struct {
	Scope, ID                          string
	Monthly, Total, Currency, RPM, TPM string
	MaxParallel                        string
}

// formOf fills a form with a user's or key's limits.
func formOf(scope billing.Scope, id string, lim *billing.Limits) budgetForm {
	f := budgetForm{Scope: string(scope), ID: id}
	if lim == nil {
		return f
	}
	amount := func(a billing.Amount) string {
		if a == 0 {
			return ""
		}
		return a.String()
	}
	count := func(n int64) string {
		if n == 0 {
			return ""
		}
		return strconv.FormatInt(n, 10)
	}
	f.Monthly, f.Total, f.Currency, f.RPM, f.TPM = amount(lim.Monthly), amount(lim.Total), lim.Currency, count(lim.RPM), count(lim.TPM)
	f.MaxParallel = count(lim.MaxParallel)
	return f
}

func (h *Handler) operatorsPage(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := budgetForm{Scope: string(billing.ScopeUser), ID: q.Get("user")}
	if id := q.Get("id"); id != "" {
		f = budgetForm{Scope: q.Get("scope"), ID: id}
	}
	h.showOperators(w, r, http.StatusOK, f, "")
}

// showOperators renders the operators' page with the limits form f and
// an error message. A form that names a user or key with limits, and
// has none of its own, shows those limits to change.
func (h *Handler) showOperators(w http.ResponseWriter, r *http.Request, status int, f budgetForm, msg string) {
	ops := h.cfg.Services.Operators
	users, err := ops.Users(r.Context())
	if err != nil {
		h.internal(w, r, "listing users", err)
		return
	}
	budgets, err := ops.Budgets(r.Context())
	if err != nil {
		h.internal(w, r, "listing budgets", err)
		return
	}
	if f.Scope == "" {
		f.Scope = string(billing.ScopeUser)
	}
	if msg == "" {
		for _, b := range budgets {
			if string(b.Scope) == f.Scope && b.ID == f.ID {
				f = formOf(b.Scope, b.ID, b.Limits)
			}
		}
	}
	h.renderMsg(w, r, status, "operators", "Operators", operatorsData{
		Users: users, Budgets: budgets, Prices: ops.Prices(), Providers: ops.Providers(), Form: f,
	}, msg)
}

// postedBudget reads the limits form: scope (user or key), id, monthly,
// total, currency, rpm, tpm, max_parallel_requests; empty fields are no
// limit.
func postedBudget(r *http.Request) (budgetForm, billing.Scope, billing.Limits, string) {
	v := func(name string) string { return strings.TrimSpace(r.PostFormValue(name)) }
	f := budgetForm{Scope: v("scope"), ID: v("id"), Monthly: v("monthly"), Total: v("total"), Currency: v("currency"), RPM: v("rpm"), TPM: v("tpm"), MaxParallel: v("max_parallel_requests")}
	if f.ID == "" && f.Scope == "" {
		// The form of older pages: a user only.
		f.Scope, f.ID = string(billing.ScopeUser), v("user")
	}
	var lim billing.Limits
	scope, err := billing.ParseScope(f.Scope)
	if err != nil {
		return f, "", lim, "the scope must be user, key or team"
	}
	if f.ID == "" {
		return f, "", lim, "name the " + f.Scope + " whose limits to set"
	}
	lim.Currency = f.Currency
	for _, a := range []struct {
		name, val string
		dst       *billing.Amount
	}{{"monthly", f.Monthly, &lim.Monthly}, {"total", f.Total, &lim.Total}} {
		if a.val == "" {
			continue
		}
		amt, err := billing.ParseAmount(a.val)
		if err != nil || amt < 0 {
			return f, "", lim, a.name + ": want an amount such as 12.50"
		}
		*a.dst = amt
	}
	for _, n := range []struct {
		name, val string
		dst       *int64
	}{{"rpm", f.RPM, &lim.RPM}, {"tpm", f.TPM, &lim.TPM}, {"parallel", f.MaxParallel, &lim.MaxParallel}} {
		if n.val == "" {
			continue
		}
		c, err := strconv.ParseInt(n.val, 10, 64)
		if err != nil || c < 0 {
			return f, "", lim, n.name + ": want a whole number"
		}
		*n.dst = c
	}
	return f, scope, lim, ""
}

// setBudget sets a user's or key's limits from the form.
func (h *Handler) setBudget(w http.ResponseWriter, r *http.Request) {
	f, scope, lim, msg := postedBudget(r)
	if msg != "" {
		h.showOperators(w, r, http.StatusBadRequest, f, msg)
		return
	}
	err := h.cfg.Services.Operators.SetBudget(r.Context(), scope, f.ID, lim)
	if errors.Is(err, ErrInvalid) {
		h.showOperators(w, r, http.StatusBadRequest, f, "setting the limits: "+err.Error())
		return
	}
	if err != nil {
		h.internal(w, r, "setting limits", err)
		return
	}
	http.Redirect(w, r, h.cfg.Prefix+"/operators#budgets", http.StatusSeeOther)
}

// deleteBudget lifts a user's or key's limits.
func (h *Handler) deleteBudget(w http.ResponseWriter, r *http.Request) {
	scopeName := strings.TrimSpace(r.PostFormValue("scope"))
	id := strings.TrimSpace(r.PostFormValue("id"))
	if scopeName == "" && id == "" {
		scopeName, id = string(billing.ScopeUser), strings.TrimSpace(r.PostFormValue("user"))
	}
	scope, err := billing.ParseScope(scopeName)
	if err != nil || id == "" {
		h.showOperators(w, r, http.StatusBadRequest, budgetForm{}, "name the user or key whose limits to remove")
		return
	}
	if err := h.cfg.Services.Operators.DeleteBudget(r.Context(), scope, id); err != nil {
		h.internal(w, r, "removing limits", err)
		return
	}
	http.Redirect(w, r, h.cfg.Prefix+"/operators#budgets", http.StatusSeeOther)
}

// ledgerData is the operators' ledger search's data.
type ledgerData struct {
	Filter    usageFilter
	User      string
	Page      *billing.RecordPage
	FirstPage string
	NextPage  string
	CSV       string
	// Partial is set when the page holds fewer records than a page's
	// size but more may follow: it looked at as many users as a page may.
	Partial bool
}

// searchFilter reads the ledger search's form: the usage page's filter
// and a user ("" for every user).
func (h *Handler) searchFilter(r *http.Request) (usageFilter, billing.RecordQuery, string) {
	f, msg := h.parseUsageFilter(r)
	user := strings.TrimSpace(r.URL.Query().Get("user"))
	q := billing.RecordQuery{User: user, Since: f.since, Until: f.until.AddDate(0, 0, 1),
		KeyID: f.Key, Model: f.Model, Outcome: f.Outcome, After: f.After, Limit: ledgerPageSize,
		Desc: true} // each user's newest first
	return f, q, msg
}

// ledgerPage searches the ledger across users.
func (h *Handler) ledgerPage(w http.ResponseWriter, r *http.Request) {
	f, q, msg := h.searchFilter(r)
	d := ledgerData{Filter: f, User: q.User}
	if msg != "" {
		h.renderMsg(w, r, http.StatusBadRequest, "ledger", "Ledger search", d, msg)
		return
	}
	page, err := h.cfg.Services.Operators.SearchRecords(r.Context(), q)
	if errors.Is(err, ErrInvalid) {
		h.renderMsg(w, r, http.StatusBadRequest, "ledger", "Ledger search", d, "this page of records does not exist: start again from the first page")
		return
	}
	if err != nil {
		h.internal(w, r, "searching the ledger", err)
		return
	}
	d.Page = page
	d.Partial = page.HasMore && len(page.Records) < q.Limit
	params := f.query()
	if q.User != "" {
		params.Set("user", q.User)
	}
	d.CSV = h.cfg.Prefix + "/operators/ledger.csv?" + params.Encode()
	if f.After != "" {
		d.FirstPage = h.cfg.Prefix + "/operators/ledger?" + params.Encode()
	}
	if page.HasMore {
		next := url.Values{}
		for k, v := range params {
			next[k] = v
		}
		next.Set("after", page.Next)
		d.NextPage = h.cfg.Prefix + "/operators/ledger?" + next.Encode()
	}
	h.render(w, r, http.StatusOK, "ledger", "Ledger search", d)
}

// ledgerCSV exports every record the search selects as CSV.
func (h *Handler) ledgerCSV(w http.ResponseWriter, r *http.Request) {
	f, q, msg := h.searchFilter(r)
	if msg != "" {
		h.fail(w, r, http.StatusBadRequest, msg)
		return
	}
	q.After = ""
	w.Header().Set("Content-Type", "text/csv; charset=utf-8")
	w.Header().Set("Content-Disposition", `attachment; filename="ledger-`+f.Since+`-`+f.Until+`.csv"`)
	if err := h.cfg.Services.Operators.ExportRecordsCSV(r.Context(), q, w); err != nil {
		h.cfg.Logger.Error("console: exporting the ledger search", zap.Error(err))
	}
}
