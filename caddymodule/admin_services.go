package caddymodule

import (
	"context"
	"io"
	"time"

	"github.com/caddy-air/caddy-air/admin"
	"github.com/caddy-air/caddy-air/billing"
	"github.com/caddy-air/caddy-air/keys"
	"github.com/caddy-air/caddy-air/refusals"
	"github.com/caddy-air/caddy-air/routing"
	"github.com/caddy-air/caddy-air/teams"
)

// adminGateway implements admin.Gateway with the running air app
// (running), looked up on each call: the admin API's services are the
// console's and the handlers', each change recorded in the audit trail
// (audited.go).
type adminGateway struct{}

// startedState returns the running app and its state, or the reason
// there is none.
func startedState() (*App, *state, error) {
	app := running.Load()
	if app == nil {
		return nil, nil, admin.ErrNotRunning
	}
	st := app.current()
	if st == nil {
		return nil, nil, admin.ErrStarting
	}
	return app, st, nil
}

// Started implements admin.Gateway.
func (adminGateway) Started() (*admin.Services, error) {
	app, st, err := startedState()
	if err != nil {
		return nil, err
	}
	s := &admin.Services{
		Keys:    adminKeys{st},
		Budgets: adminBudgets{consoleServices: consoleServices{app: app}, st: st},
		Ledger:  st.ledger,
		Records: adminRecords{st},
		Teams:   adminTeams{st},
		Audit:   st.audit,
		Alerts:  st.repos.Alerts,
		Health:  adminHealth{app, st},
	}
	if st.repos.RequestLogs != nil {
		s.RequestLogs = st.repos.RequestLogs
	}
	return s, nil
}

// Prices implements admin.Gateway.
func (adminGateway) Prices() (admin.PricesReport, error) {
	app := running.Load()
	if app == nil {
		return admin.PricesReport{}, admin.ErrNotRunning
	}
	return app.pricesReport(), nil
}

// pricesReport is a's price table as loaded: what GET /air/prices
// answers, the console's operators' page shows and the audit trail
// records on a change.
func (a *App) pricesReport() admin.PricesReport {
	return admin.PricesReport{Source: a.Prices, Currency: a.prices.Currency(), Models: a.prices.Models()}
}

// Upstreams implements admin.Gateway.
func (adminGateway) Upstreams() ([]routing.UpstreamStatus, error) {
	app := running.Load()
	if app == nil || app.Router() == nil {
		return nil, admin.ErrNotRunning
	}
	return app.Router().Status(), nil
}

// Refusals implements admin.Gateway, as the console's operators see them.
func (adminGateway) Refusals(f refusals.Filter) []refusals.Entry {
	return consoleServices{}.Refusals(f)
}

// MaxJSONDepth implements admin.Gateway.
func (adminGateway) MaxJSONDepth() int {
	if a := running.Load(); a != nil {
		return a.MaxJSONDepth
	}
	return 0
}

// adminKeys implements admin.KeyService with a state's audited changes.
type adminKeys struct{ st *state }

// List implements admin.KeyService.
func (k adminKeys) List(ctx context.Context, user string) ([]*keys.Key, error) {
	return k.st.keys.List(ctx, user)
}

// Create implements admin.KeyService.
func (k adminKeys) Create(ctx context.Context, o keys.CreateOptions) (string, *keys.Key, error) {
	return k.st.createKey(ctx, o)
}

// Update implements admin.KeyService.
func (k adminKeys) Update(ctx context.Context, id string, c keys.Change) (*keys.Key, error) {
	return k.st.updateKey(ctx, id, c)
}

// Revoke implements admin.KeyService: any user's key.
func (k adminKeys) Revoke(ctx context.Context, id string) (*keys.Key, error) {
	return k.st.revokeKey(ctx, "", id)
}

// Regenerate implements admin.KeyService.
func (k adminKeys) Regenerate(ctx context.Context, id string, grace time.Duration) (string, *keys.Key, error) {
	return k.st.regenerateKey(ctx, id, grace)
}

// adminBudgets implements admin.BudgetService: the console operators'
// budget services, and a state's budget status.
type adminBudgets struct {
	consoleServices
	st *state
}

// Status implements admin.BudgetService.
func (b adminBudgets) Status(scope billing.Scope, id string) billing.BudgetStatus {
	return b.st.budgets.Status(scope, id)
}

// adminRecords implements admin.RecordService with searchRecords and
// exportRecords, as the console's operators search.
type adminRecords struct{ st *state }

// SearchRecords implements admin.RecordService.
func (r adminRecords) SearchRecords(ctx context.Context, q billing.RecordQuery) (*billing.RecordPage, error) {
	return searchRecords(ctx, r.st, q)
}

// ExportRecordsCSV implements admin.RecordService.
func (r adminRecords) ExportRecordsCSV(ctx context.Context, q billing.RecordQuery, w io.Writer) error {
	return exportRecords(ctx, r.st, q, w)
}

// searchRecords reads a page of the records q selects: one user's pages
// as UserRecords reads them; without a user, every user's, as
// SearchRecords pages them, and with a key that names an API key only
// that key's owner's. The admin API and the console's operators search
// with it.
func searchRecords(ctx context.Context, st *state, q billing.RecordQuery) (*billing.RecordPage, error) {
	if q.User != "" {
		return st.ledger.UserRecords(ctx, q)
	}
	if err := ownerOfKey(ctx, st, &q); err != nil {
		return nil, err
	}
	return st.ledger.SearchRecords(ctx, q)
}

// exportRecords writes every record q selects as CSV, as searchRecords
// pages them.
func exportRecords(ctx context.Context, st *state, q billing.RecordQuery, w io.Writer) error {
	if q.User == "" {
		if err := ownerOfKey(ctx, st, &q); err != nil {
			return err
		}
		if q.User != "" {
			// The owner's search, with SearchRecords' cursor.
			q.After = ""
		}
	}
	return st.ledger.ExportCSV(ctx, q, w)
}

// ownerOfKey sets the user of a search without one to the owner of its
// key, when the key is an API key (the playground's "console" is not):
// a key's records are its owner's, so the search reads one user.
func ownerOfKey(ctx context.Context, st *state, q *billing.RecordQuery) error {
	if q.KeyID == "" || q.User != "" {
		return nil
	}
	all, err := st.keys.List(ctx, "")
	if err != nil {
		return err
	}
	for _, k := range all {
		if k.ID == q.KeyID {
			q.User = k.User
			return nil
		}
	}
	return nil
}

// adminTeams implements admin.TeamService with a state's audited
// changes.
type adminTeams struct{ st *state }

// List implements admin.TeamService.
func (t adminTeams) List(ctx context.Context) ([]teams.Team, error) { return t.st.teams.List(ctx) }

// Get implements admin.TeamService.
func (t adminTeams) Get(ctx context.Context, name string) (teams.Team, error) {
	return t.st.teams.Get(ctx, name)
}

// Create implements admin.TeamService.
func (t adminTeams) Create(ctx context.Context, name string, models []string, now time.Time) (teams.Team, error) {
	return t.st.createTeam(ctx, name, models, now)
}

// SetModels implements admin.TeamService.
func (t adminTeams) SetModels(ctx context.Context, name string, models []string) error {
	return t.st.setTeamModels(ctx, name, models)
}

// SetLogRequests implements admin.TeamService.
func (t adminTeams) SetLogRequests(ctx context.Context, name string, on bool) error {
	return t.st.setTeamLogRequests(ctx, name, on)
}

// AddMember implements admin.TeamService.
func (t adminTeams) AddMember(ctx context.Context, name, user string, isAdmin bool) error {
	return t.st.addMember(ctx, name, user, isAdmin)
}

// RemoveMember implements admin.TeamService.
func (t adminTeams) RemoveMember(ctx context.Context, name, user string) error {
	return t.st.removeMember(ctx, name, user)
}

// adminHealth implements admin.HealthService: the full (not public)
// report of the app's health checks on its state.
type adminHealth struct {
	app *App
	st  *state
}

// Report implements admin.HealthService.
func (h adminHealth) Report(ctx context.Context) (any, int) {
	return h.app.healthReport(ctx, h.st, false)
}

// Interface guards.
var (
	_ admin.Gateway       = adminGateway{}
	_ admin.KeyService    = adminKeys{}
	_ admin.BudgetService = adminBudgets{}
	_ admin.LedgerService = (*billing.Ledger)(nil)
	_ admin.RecordService = adminRecords{}
	_ admin.TeamService   = adminTeams{}
	_ admin.HealthService = adminHealth{}
)
