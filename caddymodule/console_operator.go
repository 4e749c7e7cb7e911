package caddymodule

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/caddy-air/caddy-air/billing"
	"github.com/caddy-air/caddy-air/console"
	"github.com/caddy-air/caddy-air/gateway"
	"github.com/caddy-air/caddy-air/routing"
)

// Users implements console.OperatorService: the users of this month's
// ledger (GET /air/users), with those who only have keys or limits after
// them, each with its keys and budget.
func (s consoleServices) Users(ctx context.Context) ([]console.UserSummary, error) {
	st, err := s.flushed(ctx)
	if err != nil {
		return nil, err
	}
	month, err := st.Ledger.Users(ctx, time.Now().UTC().Format("2006-01"))
	if err != nil {
		return nil, err
	}
	byUser := map[string]*console.UserSummary{}
	var out []*console.UserSummary
	add := func(name string) *console.UserSummary {
		u := byUser[name]
		if u == nil {
			u = &console.UserSummary{User: name}
			byUser[name] = u
			out = append(out, u)
		}
		return u
	}
	for _, uu := range month {
		u := add(uu.User)
		u.Requests, u.Unpriced, u.Spend = uu.Requests, uu.Unpriced, uu.Spend
	}
	all, err := st.Keys.List(ctx, "")
	if err != nil {
		return nil, err
	}
	now := time.Now().UTC()
	for _, k := range all {
		u := add(k.User)
		u.Keys++
		if k.Active(now) {
			u.Active++
		}
	}
	budgets, err := st.Budgets.List(ctx)
	if err != nil {
		return nil, err
	}
	for _, b := range budgets {
		if b.Scope == billing.ScopeUser {
			add(b.ID)
		}
	}
	// The month's users come top spenders first; the others by name.
	head := out[:len(month)]
	tail := out[len(month):]
	slices.SortFunc(tail, func(a, b *console.UserSummary) int { return strings.Compare(a.User, b.User) })
	list := make([]console.UserSummary, 0, len(out))
	for _, u := range append(head, tail...) {
		u.Budget = st.Budgets.Status(billing.ScopeUser, u.User)
		list = append(list, *u)
	}
	return list, nil
}

// Budgets implements console.OperatorService: GET /air/budgets/.
func (s consoleServices) Budgets(ctx context.Context) ([]billing.BudgetEntry, error) {
	st, err := s.state()
	if err != nil {
		return nil, err
	}
	return st.Budgets.List(ctx)
}

// SetBudget implements console.OperatorService: PUT
// /air/budgets/<scope>/<id>, whose refusals are the request's (400), as
// there.
func (s consoleServices) SetBudget(ctx context.Context, scope billing.Scope, id string, lim billing.Limits) error {
	st, err := s.state()
	if err != nil {
		return err
	}
	if err := st.CheckLimits(ctx, s.app.cfg.Prices, scope, id, lim); errors.Is(err, gateway.ErrBadLimits) {
		return console.Invalid(err)
	} else if err != nil {
		return err
	}
	if err := st.SetLimits(ctx, scope, id, lim); err != nil {
		return console.Invalid(err)
	}
	return nil
}

// DeleteBudget implements console.OperatorService: DELETE
// /air/budgets/<scope>/<id>.
func (s consoleServices) DeleteBudget(ctx context.Context, scope billing.Scope, id string) error {
	st, err := s.state()
	if err != nil {
		return err
	}
	return st.DeleteLimits(ctx, scope, id)
}

// SearchRecords implements console.OperatorService: GET /air/records,
// with or without a user (searchRecords); its errors are the request's,
// as there.
func (s consoleServices) SearchRecords(ctx context.Context, q billing.RecordQuery) (*billing.RecordPage, error) {
	st, err := s.flushed(ctx)
	if err != nil {
		return nil, err
	}
	page, err := searchRecords(ctx, st, q)
	if err != nil {
		return nil, console.Invalid(err)
	}
	return page, nil
}

// ExportRecordsCSV implements console.OperatorService: GET
// /air/records?format=csv.
func (s consoleServices) ExportRecordsCSV(ctx context.Context, q billing.RecordQuery, w io.Writer) error {
	st, err := s.flushed(ctx)
	if err != nil {
		return err
	}
	return exportRecords(ctx, st, q, w)
}

// Prices implements console.OperatorService: GET /air/prices, and the
// file as read.
func (s consoleServices) Prices() console.PriceView {
	r := s.app.pricesReport()
	v := console.PriceView{Source: r.Source, Currency: r.Currency, Models: r.Models, Text: s.app.priceText}
	if v.Source == "" {
		v.Source, v.Text = "(no price file: every model is unpriced)", ""
	}
	return v
}

// Providers implements console.OperatorService.
func (s consoleServices) Providers() []console.ProviderView {
	routes := s.app.Routes()
	var status []routing.UpstreamStatus
	if r := s.app.Router(); r != nil {
		status = r.Status()
	}
	var out []console.ProviderView
	for _, p := range routes.Providers() {
		pv := console.ProviderView{Name: p.Name, Protocol: p.Protocol}
		for _, u := range p.BaseURLs {
			// A base URL may carry credentials (user info, an api-key
			// query): the page shows it as metrics and logs do.
			pv.BaseURLs = append(pv.BaseURLs, routing.PublicURL(u))
		}
		if s.app.cfg.Tracker != nil {
			st := s.app.cfg.Tracker.Stats(p.Name)
			pv.State = fmt.Sprintf("%d attempts, %d failed in %s", st.Attempts, st.Failures, s.app.cfg.Tracker.Window())
		}
		for _, u := range status {
			if u.Provider == p.Name {
				pv.Upstreams = append(pv.Upstreams, u)
			}
		}
		for _, r := range routes.Models() {
			if r.Provider == p {
				pv.Models = append(pv.Models, console.ModelView{Pattern: r.Pattern, Kind: r.Kind, Priced: s.app.cfg.Prices.Priced(r.Pattern)})
			}
		}
		out = append(out, pv)
	}
	return out
}
