package console

import (
	"context"
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/caddy-air/caddy-air/billing"
	"github.com/caddy-air/caddy-air/refusals"
	"github.com/caddy-air/caddy-air/routing"
	"github.com/caddy-air/caddy-air/store"
	"github.com/caddy-air/caddy-air/tasks"
)

// Services are what the console reads and changes. Each is a thin view of
// a service the admin API and the `caddy air` command use too: the console
// computes nothing of its own, so its figures are theirs. A nil service
// hides its page.
type Services struct {
	// Keys manages API keys.
	Keys KeyService
	// Usage reports usage and cost from the ledger.
	Usage UsageService
	// Tasks lists image and video tasks.
	Tasks TaskService
	// Playground sends chat requests on behalf of the signed-in user.
	Playground PlaygroundService
	// Operators serves the operators' page.
	Operators OperatorService
	// Teams serves the team admins' page and the operators' teams.
	Teams TeamService
	// Audit reads the audit trail for the operators' audit page.
	Audit AuditService
	// Alerts reads the alerts, for the operators' alerts page.
	Alerts AlertService
	// RequestLogs reads stored request logs; nil: none are shown.
	RequestLogs RequestLogService
}

// ErrNotFound is returned by services for an id that does not exist.
var ErrNotFound = errors.New("not found")

// ErrInvalid marks an error caused by what the user sent (a bad glob, a
// bad limit, a stale cursor): the console shows it with a 400, its text
// included.
var ErrInvalid = errors.New("invalid")

// Invalid marks err as caused by what the user sent: it wraps ErrInvalid
// and err, and reads as err.
// A store's refusal on a full disk (store.ErrStorageFull) is no fault of
// the request and stays as it is: the page answers 507.
func Invalid(err error) error {
	if errors.Is(err, store.ErrStorageFull) {
		return err
	}
	return invalidError{err}
}

// invalidError is what Invalid returns.
type invalidError struct{ err error }

// Error implements error.
func (e invalidError) Error() string { return e.err.Error() }

// Unwrap returns ErrInvalid and the cause.
func (e invalidError) Unwrap() []error { return []error{ErrInvalid, e.err} }

// Key is an API key as the console shows it, without its secret.
type Key struct {
	// ID is the key's public id.
	ID string
	// User owns the key.
	User string
	// Name is the optional label given at creation.
	Name string
	// CreatedAt is when the key was created.
	CreatedAt time.Time
	// ExpiresAt is when the key stops working, if it expires.
	ExpiresAt *time.Time
	// RevokedAt is when the key was revoked, if it was.
	RevokedAt *time.Time
	// LastUsedAt is when the key last authenticated a request (nil:
	// never).
	LastUsedAt *time.Time
	// Models are the models or globs the key is limited to (empty: all).
	Models []string
	// Limits are the key's own limits (its spend limit among them), nil
	// if it has none.
	Limits *billing.Limits
	// State is "active", "expired" or "revoked", as the key service
	// reported it when it listed the key.
	State string
}

// NewKey describes a key to create.
type NewKey struct {
	// Name is an optional label.
	Name string
	// ExpiresAt is an optional expiry time.
	ExpiresAt *time.Time
	// Models optionally restrict the key to these model ids or globs.
	Models []string
	// Limit is an optional all-time spend limit of the key, a decimal
	// amount in the price table's currency ("" for none).
	Limit string
}

// KeyEdit is what an operator changes of a key: each field replaces the
// key's.
type KeyEdit struct {
	// Name is the key's label.
	Name string
	// Models are the model ids or globs the key may use (empty: all).
	Models []string
	// ExpiresAt is when the key stops working (nil: never).
	ExpiresAt *time.Time
}

// KeyService lists, creates and revokes the signed-in user's API keys:
// every method takes the user, and none reaches another user's keys.
type KeyService interface {
	// List returns user's keys.
	List(ctx context.Context, user string) ([]Key, error)
	// Create makes a key for user and returns its secret, shown once. An
	// error about the options wraps ErrInvalid.
	Create(ctx context.Context, user string, o NewKey) (secret string, k Key, err error)
	// Revoke revokes user's key id; ErrNotFound if user has no such key
	// (another user's key included).
	Revoke(ctx context.Context, user, id string) error
	// Budget returns user's own limits and spend (the user-level limits
	// an operator set), so that a user learns them before a 429.
	Budget(ctx context.Context, user string) (billing.BudgetStatus, error)
}

// UsageService reports usage from the ledger: Reports are the reports
// behind `caddy air usage` and GET /air/usage, Records and ExportCSV the
// ones behind GET /air/records.
type UsageService interface {
	// Reports sums the usage f selects, once for each grouping of by (f.By
	// is not used), from one read; records already settled are included.
	Reports(ctx context.Context, f billing.ReportFilter, by ...billing.GroupBy) ([]*billing.Report, error)
	// Records returns a page of q.User's ledger records, oldest first
	// (newest first with q.Desc), from the cursor q.After on. A bad
	// cursor wraps ErrInvalid.
	Records(ctx context.Context, q billing.RecordQuery) (*billing.RecordPage, error)
	// ExportCSV writes every record of q.User that q selects to w as CSV.
	ExportCSV(ctx context.Context, q billing.RecordQuery, w io.Writer) error
	// Refused returns up to limit of user's requests the gateway refused
	// by itself lately (GET /air/refusals?user=), newest first: they
	// have no ledger record.
	Refused(user string, limit int) []refusals.Entry
}

// TaskService lists a user's tasks.
type TaskService interface {
	// List returns a page of user's tasks, newest first: up to limit
	// tasks created before the task after ("" starts with the newest). An
	// after that names none of user's tasks wraps ErrInvalid.
	List(ctx context.Context, user, after string, limit int) (*tasks.Page, error)
}

// Settled is what a playground request cost, once its record is durable.
type Settled struct {
	// RequestID names the ledger record.
	RequestID string `json:"request_id"`
	// Model is the model that answered.
	Model string `json:"model"`
	// Usage is the billed usage.
	Usage billing.Usage `json:"usage"`
	// Priced reports whether the model has a price.
	Priced bool `json:"priced"`
	// Cost is the cost, exact, in Currency.
	Cost billing.Amount `json:"cost"`
	// Currency names the currency of Cost.
	Currency string `json:"currency"`
}

// PlaygroundService sends chat requests through the gateway's chat
// endpoint for the signed-in user, billed like any other request.
type PlaygroundService interface {
	// Models lists the chat models a user may pick.
	Models() []string
	// Chat serves body (an OpenAI chat completion request) for user on w,
	// exactly as POST /v1/chat/completions answers it, and returns the
	// request's ledger record once settled (nil if it made none).
	Chat(w http.ResponseWriter, r *http.Request, user string, body []byte) (*Settled, error)
}

// UserSummary is one user as the operators' page lists it.
type UserSummary struct {
	// User is the user id.
	User string
	// Keys counts the user's keys; Active those that still work.
	Keys, Active int
	// Requests counts the user's requests this month; Unpriced those of
	// unpriced models, which have no cost.
	Requests, Unpriced int64
	// Spend is this month's cost per currency, largest first.
	Spend []billing.CurrencyAmount
	// Budget is the user's limits and spend.
	Budget billing.BudgetStatus
}

// PriceView is the price table as loaded.
type PriceView struct {
	// Source names the price file.
	Source string
	// Currency is the table's default currency.
	Currency string
	// Models are the table's models and their prices, as loaded.
	Models []billing.ModelPrices
	// Text is the price file as read.
	Text string
}

// ProviderView is one configured provider and its models.
type ProviderView struct {
	// Name, Protocol and BaseURLs describe the provider (never its keys).
	Name, Protocol string
	BaseURLs       []string
	// State sums the provider's recent upstream attempts, e.g.
	// "12 attempts, 1 failed in 5m0s".
	State string
	// Models are the model ids or globs it serves, with their kinds.
	Models []ModelView
	// Upstreams are the state of each of its upstreams (deployment × base
	// URL × key) as GET /air/providers reports it: breaker, availability
	// and why not, attempts, requests in flight.
	Upstreams []routing.UpstreamStatus
}

// ModelView is one configured model route.
type ModelView struct {
	// Pattern is the model id or glob; Kind its kind; Priced whether the
	// price table prices it.
	Pattern, Kind string
	Priced        bool
}

// OperatorService serves the operators' page.
type OperatorService interface {
	// Users lists every known user (with requests this month, keys or
	// limits) with this month's usage and budget, top spenders first.
	Users(ctx context.Context) ([]UserSummary, error)
	// Budgets lists every user and key that has limits.
	Budgets(ctx context.Context) ([]billing.BudgetEntry, error)
	// SetBudget sets the limits (spend and rate) of a user or key,
	// replacing earlier ones; an error about lim wraps ErrInvalid.
	SetBudget(ctx context.Context, scope billing.Scope, id string, lim billing.Limits) error
	// DeleteBudget lifts the limits of a user or key.
	DeleteBudget(ctx context.Context, scope billing.Scope, id string) error
	// SearchRecords returns a page of the ledger records q selects, of
	// every user when q.User is empty (GET /air/records). A bad cursor
	// wraps ErrInvalid.
	SearchRecords(ctx context.Context, q billing.RecordQuery) (*billing.RecordPage, error)
	// ExportRecordsCSV writes every record q selects to w as CSV (GET
	// /air/records?format=csv).
	ExportRecordsCSV(ctx context.Context, q billing.RecordQuery, w io.Writer) error
	// AllKeys lists every user's keys (GET /air/keys).
	AllKeys(ctx context.Context) ([]Key, error)
	// CreateKeyFor makes a key for user (POST /air/keys) and returns its
	// secret, shown once. An error about the options wraps ErrInvalid.
	CreateKeyFor(ctx context.Context, user string, o NewKey) (secret string, k Key, err error)
	// RevokeKey revokes any user's key id (DELETE /air/keys/{id});
	// ErrNotFound if there is no such key.
	RevokeKey(ctx context.Context, id string) error
	// UpdateKey replaces the name, models and expiry of any user's key id
	// (PATCH /air/keys/{id}); ErrNotFound if there is no such key, and an
	// error about e wraps ErrInvalid.
	UpdateKey(ctx context.Context, id string, e KeyEdit) (Key, error)
	// Refusals returns the requests the gateway refused by itself lately
	// that f selects, newest first (GET /air/refusals).
	Refusals(f refusals.Filter) []refusals.Entry
	// Prices returns the price table as loaded.
	Prices() PriceView
	// Providers lists providers and their models.
	Providers() []ProviderView
}
