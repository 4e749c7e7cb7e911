package console

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/caddy-air/caddy-air/billing"
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
}

// ErrNotFound is returned by services for an id that does not exist.
var ErrNotFound = errors.New("not found")

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
	// LastUsedAt is when the key last authenticated a request, if the key
	// service tracks it (nil: unknown or never).
	LastUsedAt *time.Time
	// Models are the models or globs the key is limited to (empty: all).
	Models []string
}

// State is "active", "expired" or "revoked" at now.
func (k *Key) State(now time.Time) string {
	switch {
	case k.RevokedAt != nil:
		return "revoked"
	case k.ExpiresAt != nil && !now.Before(*k.ExpiresAt):
		return "expired"
	}
	return "active"
}

// KeyService lists, creates and revokes API keys. The console checks that
// a key belongs to the signed-in user before it revokes it.
type KeyService interface {
	// List returns user's keys.
	List(ctx context.Context, user string) ([]Key, error)
	// Create makes a key for user and returns its secret, shown once.
	Create(ctx context.Context, user, name string, expiresAt *time.Time) (secret string, k Key, err error)
	// Revoke revokes the key id; ErrNotFound if there is none.
	Revoke(ctx context.Context, id string) error
}

// LedgerQuery selects ledger records, newest first.
type LedgerQuery struct {
	// User keeps only this user's records; never empty for a user's page.
	User string
	// Since and Until bound the records' time (Until exclusive); zero: open.
	Since, Until time.Time
	// Model, KeyID and Outcome keep only records that match (empty: all).
	Model, KeyID, Outcome string
	// Offset skips that many matching records, newest first.
	Offset int
	// Limit is the page size.
	Limit int
}

// LedgerPage is one page of ledger records.
type LedgerPage struct {
	// Records are newest first.
	Records []billing.Record
	// More reports whether records beyond this page match.
	More bool
}

// UsageService reports usage from the ledger: Report is the one behind
// `caddy air usage` and GET /air/usage.
type UsageService interface {
	// Report sums usage by day and model; records already settled are
	// included.
	Report(ctx context.Context, f billing.ReportFilter) (*billing.Report, error)
	// Records returns a page of ledger records.
	Records(ctx context.Context, q LedgerQuery) (LedgerPage, error)
}

// TaskService lists a user's tasks.
type TaskService interface {
	// List returns user's most recent tasks, newest first, at most limit.
	List(ctx context.Context, user string, limit int) ([]*tasks.Task, error)
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
	// Month is this month's usage totals per currency.
	Month []billing.ReportTotal
	// Budget is the user's limits and spend.
	Budget billing.BudgetStatus
}

// PriceView is the price table as loaded.
type PriceView struct {
	// Source names the price file.
	Source string
	// Currency is the table's default currency.
	Currency string
	// Text is the table, one line per model and price.
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
	// Users lists every known user with this month's usage and budget.
	Users(ctx context.Context) ([]UserSummary, error)
	// SetBudget sets user's limits, replacing earlier ones.
	SetBudget(ctx context.Context, user string, lim billing.Limits) error
	// DeleteBudget lifts user's limits.
	DeleteBudget(ctx context.Context, user string) error
	// Prices returns the price table as loaded.
	Prices() PriceView
	// Providers lists providers and their models.
	Providers() []ProviderView
}
