package caddymodule

import (
	"context"

	"github.com/caddy-air/caddy-air/billing"
	"github.com/caddy-air/caddy-air/console"
	"github.com/caddy-air/caddy-air/gateway"
	"github.com/caddy-air/caddy-air/teams"
)

// consoleTeams is console.TeamService on the running app's teams, keys
// and budgets: console.TeamAdmin keeps the team admins' rules.
func consoleTeams(s consoleServices) console.TeamAdmin {
	return console.TeamAdmin{Open: s.teamStore}
}

// teamStore returns the console's team store on the running app's
// state.
func (s consoleServices) teamStore() (console.TeamStore, error) {
	st, err := s.state()
	if err != nil {
		return nil, err
	}
	return consoleTeamStore{s: s, st: st}, nil
}

// consoleTeamStore implements console.TeamStore with one state.
type consoleTeamStore struct {
	s  consoleServices
	st *gateway.Shared
}

// Teams implements console.TeamStore.
func (c consoleTeamStore) Teams(ctx context.Context) ([]teams.Team, error) {
	return c.st.Teams.List(ctx)
}

// TeamBudget implements console.TeamStore.
func (c consoleTeamStore) TeamBudget(name string) billing.BudgetStatus {
	return c.st.Budgets.Status(billing.ScopeTeam, name)
}

// Keys implements console.TeamStore.
func (c consoleTeamStore) Keys(ctx context.Context, user string) ([]console.Key, error) {
	list, err := c.st.Keys.List(ctx, user)
	if err != nil {
		return nil, err
	}
	out := make([]console.Key, 0, len(list))
	for _, k := range list {
		out = append(out, consoleKey(c.st, k))
	}
	return out, nil
}

// AddMember implements console.TeamStore (gateway.Shared.AddMember).
func (c consoleTeamStore) AddMember(ctx context.Context, name, user string, admin bool) error {
	return c.st.AddMember(ctx, name, user, admin)
}

// RemoveMember implements console.TeamStore.
func (c consoleTeamStore) RemoveMember(ctx context.Context, name, user string) error {
	return c.st.RemoveMember(ctx, name, user)
}

// RevokeKey implements console.TeamStore.
func (c consoleTeamStore) RevokeKey(ctx context.Context, user, id string) error {
	_, err := c.st.RevokeKey(ctx, user, id)
	return err
}

// CreateKey implements console.TeamStore (consoleServices.Create).
func (c consoleTeamStore) CreateKey(ctx context.Context, user string, o console.NewKey) (string, console.Key, error) {
	return c.s.Create(ctx, user, o)
}

// Interface guard.
var _ console.TeamStore = consoleTeamStore{}
