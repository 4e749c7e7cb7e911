package admin

import (
	"context"
	"errors"
	"io"
	"time"

	"github.com/caddy-air/caddy-air/audit"
	"github.com/caddy-air/caddy-air/billing"
	"github.com/caddy-air/caddy-air/keys"
	"github.com/caddy-air/caddy-air/refusals"
	"github.com/caddy-air/caddy-air/routing"
	"github.com/caddy-air/caddy-air/store"
	"github.com/caddy-air/caddy-air/teams"
)

// Errors of Gateway, answered with a 503 and their text.
var (
	// ErrNotRunning: no air app runs (no global `air` option).
	ErrNotRunning = errors.New("the air app is not running: configure a global `air` option")
	// ErrStarting: the air app runs but its state is not open yet.
	ErrStarting = errors.New("the air app is starting")
)

// Gateway is the running gateway as the admin API reaches it. Admin
// routes exist before any config runs, so it is asked on every request.
type Gateway interface {
	// Started returns the services of the running config once it has
	// started: ErrNotRunning or ErrStarting before.
	Started() (*Services, error)
	// Prices returns the running config's price table as loaded;
	// ErrNotRunning without an air app.
	Prices() (PricesReport, error)
	// Upstreams returns the routing state of every upstream of the
	// running config; ErrNotRunning without an air app or its router.
	Upstreams() ([]routing.UpstreamStatus, error)
	// Refusals returns the requests this instance refused by itself
	// lately that f selects, newest first (as
	// console.OperatorService.Refusals).
	Refusals(f refusals.Filter) []refusals.Entry
	// MaxJSONDepth is the running config's bound on the nesting of a
	// request body; 0 (the default bound) when none runs.
	MaxJSONDepth() int
}

// Services are what the admin API reads and changes of a started config.
// The console reaches the same services (console.Services), so that
// both show the same figures; each change is recorded in the audit trail
// by the service, with the actor of the request's context.
type Services struct {
	// Keys manages every user's API keys.
	Keys KeyService
	// Budgets reads and sets the limits of users, keys and teams.
	Budgets BudgetService
	// Ledger reads the ledger's records and reports.
	Ledger LedgerService
	// Records pages and exports the ledger records of a search.
	Records RecordService
	// Teams manages teams and their members.
	Teams TeamService
	// Audit reads the audit trail.
	Audit AuditService
	// Alerts reads the alerts' deliveries.
	Alerts AlertService
	// RequestLogs reads stored request logs; nil without a request-log
	// store.
	RequestLogs RequestLogService
	// Health runs the health checks.
	Health HealthService
}

// KeyService manages any user's API keys, each change recorded in the
// audit trail. Its errors are the key service's (keys.ErrNoSuchKey,
// keys.ErrRevoked, keys.ErrBadGrace…).
type KeyService interface {
	// List returns user's keys, every user's for "".
	List(ctx context.Context, user string) ([]*keys.Key, error)
	// Create makes a key and returns its secret, shown once.
	Create(ctx context.Context, o keys.CreateOptions) (string, *keys.Key, error)
	// Update changes key id.
	Update(ctx context.Context, id string, c keys.Change) (*keys.Key, error)
	// Revoke revokes key id.
	Revoke(ctx context.Context, id string) (*keys.Key, error)
	// Regenerate gives key id a new secret, the old one working for
	// grace, and returns the new one, shown once.
	Regenerate(ctx context.Context, id string, grace time.Duration) (string, *keys.Key, error)
}

// BudgetService reads and sets limits: the methods of
// console.OperatorService that the budgets page uses, and Status.
type BudgetService interface {
	// Budgets lists every user, key and team that has limits.
	Budgets(ctx context.Context) ([]billing.BudgetEntry, error)
	// Status returns the limits and spend of id in scope.
	Status(scope billing.Scope, id string) billing.BudgetStatus
	// SetBudget checks and sets the limits of id in scope, replacing
	// earlier ones; an error about lim wraps console.ErrInvalid.
	SetBudget(ctx context.Context, scope billing.Scope, id string, lim billing.Limits) error
	// DeleteBudget lifts the limits of id in scope.
	DeleteBudget(ctx context.Context, scope billing.Scope, id string) error
}

// LedgerService reads the ledger, as *billing.Ledger does.
type LedgerService interface {
	// Flush writes the records already settled, so that reads see them.
	Flush(ctx context.Context) error
	// Report sums the usage f selects.
	Report(ctx context.Context, f billing.ReportFilter) (*billing.Report, error)
	// Users lists the users of month with their requests and spend,
	// top spenders first.
	Users(ctx context.Context, month string) ([]billing.UserUsage, error)
	// Records calls fn with each record written in [since, until), in
	// the order they were written, until fn returns store.ErrStop.
	Records(ctx context.Context, since, until time.Time, fn func(billing.Record) error) error
}

// RecordService pages and exports the records of a search, as the
// console's operators search them (console.OperatorService's
// SearchRecords and ExportRecordsCSV, without their flush).
type RecordService interface {
	// SearchRecords returns a page of the records q selects: one user's,
	// or without q.User every user's.
	SearchRecords(ctx context.Context, q billing.RecordQuery) (*billing.RecordPage, error)
	// ExportRecordsCSV writes every record q selects to w as CSV.
	ExportRecordsCSV(ctx context.Context, q billing.RecordQuery, w io.Writer) error
}

// TeamService manages teams, each change recorded in the audit trail.
// Its errors are the teams service's (teams.ErrNotFound, teams.ErrExists,
// teams.ErrInvalid).
type TeamService interface {
	// List returns every team.
	List(ctx context.Context) ([]teams.Team, error)
	// Get returns team name.
	Get(ctx context.Context, name string) (teams.Team, error)
	// Create creates a team without members.
	Create(ctx context.Context, name string, models []string, now time.Time) (teams.Team, error)
	// SetModels replaces the models a team's members may use.
	SetModels(ctx context.Context, name string, models []string) error
	// SetLogRequests switches request logs of a team's members.
	SetLogRequests(ctx context.Context, name string, on bool) error
	// AddMember makes user a member (or an admin) of team name.
	AddMember(ctx context.Context, name, user string, admin bool) error
	// RemoveMember takes user out of team name.
	RemoveMember(ctx context.Context, name, user string) error
}

// AuditService reads the audit trail, as *audit.Log does.
type AuditService interface {
	// List returns a page of the entries q selects, newest first.
	List(ctx context.Context, q audit.Query) (*audit.Page, error)
	// Export writes every entry q selects to w in format (audit.FormatCSV
	// or audit.FormatJSONL).
	Export(ctx context.Context, q store.AuditQuery, format string, w io.Writer) error
}

// AlertService reads the alerts' deliveries (as console.AlertService).
type AlertService interface {
	// Recent returns the deliveries of the n newest alerts, newest first.
	Recent(ctx context.Context, n int) ([]store.AlertDelivery, error)
}

// RequestLogService reads stored request logs, as store.RequestLogs does.
type RequestLogService interface {
	// Get returns the log of a ledger record; store.ErrNotFound if none
	// was kept.
	Get(ctx context.Context, requestID string) (store.RequestLog, error)
}

// HealthService runs the health checks.
type HealthService interface {
	// Report returns the full health report (as JSON) and its status:
	// 200 while billable work is accepted, 503 otherwise.
	Report(ctx context.Context) (report any, status int)
}
