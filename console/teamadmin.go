package console

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/caddy-air/caddy-air/billing"
	"github.com/caddy-air/caddy-air/keys"
	"github.com/caddy-air/caddy-air/teams"
)

// TeamStore is what TeamAdmin reads and changes of the running gateway,
// for one call: its teams, keys and budgets. Each change is recorded in
// the audit trail by the store.
type TeamStore interface {
	// Teams lists every team, read from the store.
	Teams(ctx context.Context) ([]teams.Team, error)
	// TeamBudget returns team name's limits and spend.
	TeamBudget(name string) billing.BudgetStatus
	// Keys returns user's keys.
	Keys(ctx context.Context, user string) ([]Key, error)
	// AddMember makes user a member (or an admin) of team name; its
	// errors are the teams service's (teams.ErrExists, teams.ErrInvalid).
	AddMember(ctx context.Context, name, user string, admin bool) error
	// RemoveMember takes user out of team name; teams.ErrNotFound when
	// user is not in it.
	RemoveMember(ctx context.Context, name, user string) error
	// RevokeKey revokes key id of user's; keys.ErrNoSuchKey when user
	// has none such.
	RevokeKey(ctx context.Context, user, id string) error
	// CreateKey makes a key for user and returns its secret
	// (KeyService.Create).
	CreateKey(ctx context.Context, user string, o NewKey) (string, Key, error)
}

// TeamAdmin implements TeamService on a TeamStore: a team admin's calls
// act on the team the admin administers, read afresh from the store on
// each call, and on its members only.
type TeamAdmin struct {
	// Open returns the store of the running gateway, or the error that
	// none runs.
	Open func() (TeamStore, error)
}

// adminTeam opens the store and returns it with the team that user
// administers, read from it; ErrNotFound when none.
func (s TeamAdmin) adminTeam(ctx context.Context, user string) (TeamStore, teams.Team, error) {
	st, err := s.Open()
	if err != nil {
		return nil, teams.Team{}, err
	}
	list, err := st.Teams(ctx)
	if err != nil {
		return nil, teams.Team{}, err
	}
	for _, t := range list {
		if t.IsAdmin(user) {
			return st, t, nil
		}
	}
	return nil, teams.Team{}, ErrNotFound
}

// consoleTeam converts a team for the console, with its budget.
func consoleTeam(st TeamStore, t teams.Team) Team {
	out := Team{Name: t.Name, Models: t.Models, Budget: st.TeamBudget(t.Name)}
	for _, m := range t.Members {
		out.Members = append(out.Members, TeamMember(m))
	}
	return out
}

// AdminTeam implements TeamService.
func (s TeamAdmin) AdminTeam(ctx context.Context, user string) (Team, error) {
	st, t, err := s.adminTeam(ctx, user)
	if err != nil {
		return Team{}, err
	}
	out := consoleTeam(st, t)
	for _, m := range t.Members {
		list, err := st.Keys(ctx, m.User)
		if err != nil {
			return Team{}, err
		}
		out.Keys = append(out.Keys, list...)
	}
	slices.SortFunc(out.Keys, func(a, b Key) int { return b.CreatedAt.Compare(a.CreatedAt) })
	return out, nil
}

// AddMember implements TeamService.
func (s TeamAdmin) AddMember(ctx context.Context, admin, member string, asAdmin bool) error {
	st, t, err := s.adminTeam(ctx, admin)
	if err != nil {
		return err
	}
	err = st.AddMember(ctx, t.Name, member, asAdmin)
	switch {
	case errors.Is(err, teams.ErrExists):
		return Invalid(fmt.Errorf("%s is a member of another team: an operator must remove them from it first", member))
	case errors.Is(err, teams.ErrInvalid):
		return Invalid(err)
	}
	return err
}

// RemoveMember implements TeamService.
func (s TeamAdmin) RemoveMember(ctx context.Context, admin, member string) error {
	st, t, err := s.adminTeam(ctx, admin)
	if err != nil {
		return err
	}
	if member == admin {
		return Invalid(errors.New("you cannot remove yourself: ask an operator"))
	}
	if err := st.RemoveMember(ctx, t.Name, member); errors.Is(err, teams.ErrNotFound) {
		return ErrNotFound
	} else if err != nil {
		return err
	}
	return nil
}

// RevokeKey implements TeamService: the key's owner must be a member of
// the admin's team, or the key is not found.
func (s TeamAdmin) RevokeKey(ctx context.Context, admin, id string) error {
	st, t, err := s.adminTeam(ctx, admin)
	if err != nil {
		return err
	}
	for _, m := range t.Members {
		if err := st.RevokeKey(ctx, m.User, id); err == nil {
			return nil
		} else if !errors.Is(err, keys.ErrNoSuchKey) {
			return err
		}
	}
	return ErrNotFound
}

// CreateKey implements TeamService: a key for a member of the admin's
// team only.
func (s TeamAdmin) CreateKey(ctx context.Context, admin, member string, o NewKey) (string, Key, error) {
	st, t, err := s.adminTeam(ctx, admin)
	if err != nil {
		return "", Key{}, err
	}
	if !slices.ContainsFunc(t.Members, func(m teams.Member) bool { return m.User == member }) {
		return "", Key{}, ErrNotFound
	}
	return st.CreateKey(ctx, member, o)
}

// Teams implements TeamService.
func (s TeamAdmin) Teams(ctx context.Context) ([]Team, error) {
	st, err := s.Open()
	if err != nil {
		return nil, err
	}
	list, err := st.Teams(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]Team, 0, len(list))
	for _, t := range list {
		out = append(out, consoleTeam(st, t))
	}
	return out, nil
}

// Interface guard.
var _ TeamService = TeamAdmin{}
