package gateway

import (
	"context"
	"slices"
	"time"

	"github.com/caddy-air/caddy-air/audit"
	"github.com/caddy-air/caddy-air/teams"
)

// The mutations of teams that the admin API and the console share, each
// recorded in the audit trail as one entry of target type "team" naming
// the team (see audited.go). A team's limits are recorded by setLimits,
// as budget.set of target type "team".

// memberOf returns user's membership of team name, nil if the team has
// no such member (or cannot be read).
func (st *Shared) MemberOf(ctx context.Context, name, user string) *teams.Member {
	t, err := st.Teams.Get(ctx, name)
	if err != nil {
		return nil
	}
	i := slices.IndexFunc(t.Members, func(m teams.Member) bool { return m.User == user })
	if i < 0 {
		return nil
	}
	return &t.Members[i]
}

// createTeam creates a team and records it.
func (st *Shared) CreateTeam(ctx context.Context, name string, models []string, now time.Time) (teams.Team, error) {
	t, err := st.Teams.Create(ctx, name, models, now)
	if err != nil {
		return teams.Team{}, err
	}
	st.Record(ctx, audit.Entry{Action: "team.create", TargetType: "team", TargetID: t.Name, After: t})
	return t, nil
}

// teamModels is a team's models as the trail records them.
type teamModels struct {
	Models []string `json:"models"`
}

// setTeamModels replaces the models a team's members may use and records
// it.
func (st *Shared) SetTeamModels(ctx context.Context, name string, models []string) error {
	var before any
	if t, err := st.Teams.Get(ctx, name); err == nil {
		before = teamModels{t.Models}
	}
	if err := st.Teams.SetModels(ctx, name, models); err != nil {
		return err
	}
	st.Record(ctx, audit.Entry{Action: "team.models", TargetType: "team", TargetID: name, Before: before, After: teamModels{models}})
	return nil
}

// teamLogRequests is a team's request-log switch as the trail records it.
type teamLogRequests struct {
	LogRequests bool `json:"log_requests"`
}

// setTeamLogRequests switches request logs of a team and records it.
func (st *Shared) SetTeamLogRequests(ctx context.Context, name string, on bool) error {
	var before any
	if t, err := st.Teams.Get(ctx, name); err == nil {
		before = teamLogRequests{t.LogRequests}
	}
	if err := st.Teams.SetLogRequests(ctx, name, on); err != nil {
		return err
	}
	st.Record(ctx, audit.Entry{Action: "team.log_requests", TargetType: "team", TargetID: name, Before: before, After: teamLogRequests{on}})
	return nil
}

// addMember makes user a member (or admin) of team name and records it:
// team.member.add for a new member, team.admin.grant or team.admin.revoke
// for a member whose role changed, team.member.update for one set as
// they were.
func (st *Shared) AddMember(ctx context.Context, name, user string, admin bool) error {
	before := st.MemberOf(ctx, name, user)
	if err := st.Teams.Add(ctx, name, user, admin); err != nil {
		return err
	}
	action := "team.member.update"
	switch {
	case before == nil:
		action = "team.member.add"
	case !before.Admin && admin:
		action = "team.admin.grant"
	case before.Admin && !admin:
		action = "team.admin.revoke"
	}
	e := audit.Entry{Action: action, TargetType: "team", TargetID: name, After: teams.Member{User: user, Admin: admin}}
	if before != nil {
		e.Before = *before
	}
	st.Record(ctx, e)
	return nil
}

// removeMember takes user out of team name and records it.
func (st *Shared) RemoveMember(ctx context.Context, name, user string) error {
	before := st.MemberOf(ctx, name, user)
	if err := st.Teams.Remove(ctx, name, user); err != nil {
		return err
	}
	e := audit.Entry{Action: "team.member.remove", TargetType: "team", TargetID: name}
	if before != nil {
		e.Before = *before
	}
	st.Record(ctx, e)
	return nil
}
