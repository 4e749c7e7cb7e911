package store

import (
	"context"
	"time"
)

// Team is a stored team: a group of users whose requests count against
// the team's limits (kept in Budgets under ScopeTeam) as well as their
// own and their keys'.
type Team struct {
	// Name identifies the team.
	Name string
	// Models, if not empty, are the model ids or globs (path.Match
	// syntax) the team's members may use; empty means every model.
	Models []string
	// CreatedAt is when the team was created.
	CreatedAt time.Time
	// Members are the team's users, sorted by name.
	Members []Member
	// LogRequests keeps the bodies of the requests of the team's members
	// (request logs).
	LogRequests bool
}

// Member is a user of a team.
type Member struct {
	// User is the user's name.
	User string
	// Admin lets the user manage the team's members and keys.
	Admin bool
}

// Teams keeps teams and their members. A user is a member of at most one
// team. Every change has committed when its call returns, so that every
// instance reads it on its next List.
type Teams interface {
	// Create stores t with no members (t.Members is ignored). A taken
	// name is ErrExists.
	Create(ctx context.Context, t Team) error
	// Get returns team name with its members, or ErrNotFound.
	Get(ctx context.Context, name string) (Team, error)
	// List returns every team with its members, sorted by name.
	List(ctx context.Context) ([]Team, error)
	// SetModels replaces the models of team name; ErrNotFound if it does
	// not exist.
	SetModels(ctx context.Context, name string, models []string) error
	// SetLogRequests switches request logs of team name on or off;
	// ErrNotFound if it does not exist.
	SetLogRequests(ctx context.Context, name string, on bool) error
	// AddMember makes user a member of team name, or changes the admin
	// flag of a member. An unknown team is ErrNotFound; a user who is a
	// member of another team is ErrExists, and nothing changes.
	AddMember(ctx context.Context, name, user string, admin bool) error
	// RemoveMember removes user from team name; ErrNotFound if user is
	// not a member of it.
	RemoveMember(ctx context.Context, name, user string) error
}
