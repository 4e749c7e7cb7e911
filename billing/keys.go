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

// Scope says whether limits and spend belong to a team, a user or an API
// key.
type Scope string

// Scopes of limits. A request counts against its key, its key's user and
// the user's team: limits nest key ⊂ user ⊂ team.
const (
	ScopeUser Scope = "user"
	ScopeKey  Scope = "key"
	ScopeTeam Scope = "team"
)

// valid reports whether s is a known scope.
func (s Scope) valid() bool { return s == ScopeUser || s == ScopeKey || s == ScopeTeam }

// monthOf is the spend period (calendar month, UTC) that t falls in.
func monthOf(t time.Time) string { return t.UTC().Format(monthLayout) }
