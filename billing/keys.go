package billing

import (
	"time"

	"github.com/caddy-air/caddy-air/store"
)

// dayLayout names an aggregate's day, monthLayout a spend period.
const (
	dayLayout   = store.DayLayout
	monthLayout = store.MonthLayout
	periodTotal = store.PeriodTotal
)

// Scope says whether limits and spend belong to a user or to an API key.
type Scope string

// Scopes of limits.
const (
	ScopeUser Scope = "user"
	ScopeKey  Scope = "key"
)

// valid reports whether s is a known scope.
func (s Scope) valid() bool { return s == ScopeUser || s == ScopeKey }

// monthOf is the spend period (calendar month, UTC) that t falls in.
func monthOf(t time.Time) string { return t.UTC().Format(monthLayout) }
