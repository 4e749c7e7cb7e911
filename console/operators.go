package console

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/caddy-air/caddy-air/billing"
)

// operatorsData is the operators' page's data.
type operatorsData struct {
	Users     []UserSummary
	Budgets   []billing.BudgetEntry
	Prices    PriceView
	Providers []ProviderView
	// Edit is the user whose budget form is filled in.
	Edit string
}

func (h *Handler) operatorsPage(w http.ResponseWriter, r *http.Request) {
	h.showOperators(w, r, http.StatusOK, "")
}

// showOperators renders the operators' page with an error message.
func (h *Handler) showOperators(w http.ResponseWriter, r *http.Request, status int, msg string) {
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
	h.renderMsg(w, r, status, "operators", "Operators", operatorsData{
		Users: users, Budgets: budgets, Prices: ops.Prices(), Providers: ops.Providers(), Edit: r.URL.Query().Get("user"),
	}, msg)
}

// setBudget sets a user's limits from the form (monthly, total, currency,
// rpm, tpm; empty fields are no limit).
func (h *Handler) setBudget(w http.ResponseWriter, r *http.Request) {
	user := strings.TrimSpace(r.PostFormValue("user"))
	if user == "" {
		h.showOperators(w, r, http.StatusBadRequest, "name the user whose budget to set")
		return
	}
	var lim billing.Limits
	lim.Currency = strings.TrimSpace(r.PostFormValue("currency"))
	for field, dst := range map[string]*billing.Amount{"monthly": &lim.Monthly, "total": &lim.Total} {
		if v := strings.TrimSpace(r.PostFormValue(field)); v != "" {
			a, err := billing.ParseAmount(v)
			if err != nil || a < 0 {
				h.showOperators(w, r, http.StatusBadRequest, field+": want an amount such as 12.50")
				return
			}
			*dst = a
		}
	}
	for field, dst := range map[string]*int64{"rpm": &lim.RPM, "tpm": &lim.TPM} {
		if v := strings.TrimSpace(r.PostFormValue(field)); v != "" {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 0 {
				h.showOperators(w, r, http.StatusBadRequest, field+": want a whole number")
				return
			}
			*dst = n
		}
	}
	if err := h.cfg.Services.Operators.SetBudget(r.Context(), user, lim); err != nil {
		h.showOperators(w, r, http.StatusBadRequest, "setting the budget: "+err.Error())
		return
	}
	http.Redirect(w, r, h.cfg.Prefix+"/operators#users", http.StatusSeeOther)
}

// deleteBudget lifts a user's limits.
func (h *Handler) deleteBudget(w http.ResponseWriter, r *http.Request) {
	user := strings.TrimSpace(r.PostFormValue("user"))
	if user == "" {
		h.showOperators(w, r, http.StatusBadRequest, "name the user whose budget to remove")
		return
	}
	if err := h.cfg.Services.Operators.DeleteBudget(r.Context(), user); err != nil {
		h.internal(w, r, "removing a budget", err)
		return
	}
	http.Redirect(w, r, h.cfg.Prefix+"/operators#users", http.StatusSeeOther)
}
