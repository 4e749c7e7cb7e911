package caddymodule

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/caddy-air/caddy-air/billing"
	"github.com/caddy-air/caddy-air/console"
	"github.com/caddy-air/caddy-air/gateway"
	"github.com/caddy-air/caddy-air/keys"
	"github.com/caddy-air/caddy-air/teams"
)

// consoleTeams implements console.TeamService with the running app's
// teams, keys and budgets. A team admin's calls act on the team the admin
// administers, read afresh from the store on each call.
type consoleTeams struct{ consoleServices }

// adminTeam returns the team that user administers, read from the store;
// console.ErrNotFound when none.
func (s consoleTeams) adminTeam(ctx context.Context, st *gateway.Shared, user string) (teams.Team, error) {
	list, err := st.Teams.List(ctx)
	if err != nil {
		return teams.Team{}, err
	}
	for _, t := range list {
		if t.IsAdmin(user) {
			return t, nil
		}
	}
	return teams.Team{}, console.ErrNotFound
}

// consoleTeam converts a team for the console, with its budget.
func consoleTeam(st *gateway.Shared, t teams.Team) console.Team {
	out := console.Team{Name: t.Name, Models: t.Models, Budget: st.Budgets.Status(billing.ScopeTeam, t.Name)}
	for _, m := range t.Members {
		out.Members = append(out.Members, console.TeamMember(m))
	}
	return out
}

// AdminTeam implements console.TeamService.
func (s consoleTeams) AdminTeam(ctx context.Context, user string) (console.Team, error) {
	st, err := s.state()
	if err != nil {
		return console.Team{}, err
	}
	t, err := s.adminTeam(ctx, st, user)
	if err != nil {
		return console.Team{}, err
	}
	out := consoleTeam(st, t)
	for _, m := range t.Members {
		list, err := st.Keys.List(ctx, m.User)
		if err != nil {
			return console.Team{}, err
		}
		for _, k := range list {
			out.Keys = append(out.Keys, consoleKey(st, k))
		}
	}
	slices.SortFunc(out.Keys, func(a, b console.Key) int { return b.CreatedAt.Compare(a.CreatedAt) })
	return out, nil
}

// AddMember implements console.TeamService.
func (s consoleTeams) AddMember(ctx context.Context, admin, member string, asAdmin bool) error {
	st, err := s.state()
	if err != nil {
		return err
	}
	t, err := s.adminTeam(ctx, st, admin)
	if err != nil {
		return err
	}
	err = st.AddMember(ctx, t.Name, member, asAdmin)
	switch {
	case errors.Is(err, teams.ErrExists):
		return console.Invalid(fmt.Errorf("%s is a member of another team: an operator must remove them from it first", member))
	case errors.Is(err, teams.ErrInvalid):
		return console.Invalid(err)
	}
	return err
}

// RemoveMember implements console.TeamService.
func (s consoleTeams) RemoveMember(ctx context.Context, admin, member string) error {
	st, err := s.state()
	if err != nil {
		return err
	}
	t, err := s.adminTeam(ctx, st, admin)
	if err != nil {
		return err
	}
	if member == admin {
		return console.Invalid(errors.New("you cannot remove yourself: ask an operator"))
	}
	if err := st.RemoveMember(ctx, t.Name, member); errors.Is(err, teams.ErrNotFound) {
		return console.ErrNotFound
	} else if err != nil {
		return err
	}
	return nil
}

// RevokeKey implements console.TeamService: the key's owner must be a
// member of the admin's team, or the key is not found.
func (s consoleTeams) RevokeKey(ctx context.Context, admin, id string) error {
	st, err := s.state()
	if err != nil {
		return err
	}
	t, err := s.adminTeam(ctx, st, admin)
	if err != nil {
		return err
	}
	for _, m := range t.Members {
		if _, err := st.RevokeKey(ctx, m.User, id); err == nil {
			return nil
		} else if !errors.Is(err, keys.ErrNoSuchKey) {
			return err
		}
	}
	return console.ErrNotFound
}

// CreateKey implements console.TeamService: a key for a member of the
// admin's team only.
func (s consoleTeams) CreateKey(ctx context.Context, admin, member string, o console.NewKey) (string, console.Key, error) {
	st, err := s.state()
	if err != nil {
		return "", console.Key{}, err
	}
	t, err := s.adminTeam(ctx, st, admin)
	if err != nil {
		return "", console.Key{}, err
	}
	if !slices.ContainsFunc(t.Members, func(m teams.Member) bool { return m.User == member }) {
		return "", console.Key{}, console.ErrNotFound
	}
	return s.Create(ctx, member, o)
}

// Teams implements console.TeamService.
func (s consoleTeams) Teams(ctx context.Context) ([]console.Team, error) {
	st, err := s.state()
	if err != nil {
		return nil, err
	}
	list, err := st.Teams.List(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]console.Team, 0, len(list))
	for _, t := range list {
		out = append(out, consoleTeam(st, t))
	}
	return out, nil
}

// Interface guard.
var _ console.TeamService = consoleTeams{}
