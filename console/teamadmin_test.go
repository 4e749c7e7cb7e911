package console

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/caddy-air/caddy-air/billing"
	"github.com/caddy-air/caddy-air/keys"
	"github.com/caddy-air/caddy-air/teams"
)

// teamStore is a TeamStore in memory: teams, and keys by user.
type teamStore struct {
	teams   []teams.Team
	keys    map[string][]Key
	created []string // users given a key
	revoked []string // key ids revoked
	addErr  error
}

func (s *teamStore) Teams(context.Context) ([]teams.Team, error) { return s.teams, nil }
func (s *teamStore) TeamBudget(string) billing.BudgetStatus      { return billing.BudgetStatus{} }
func (s *teamStore) Keys(_ context.Context, user string) ([]Key, error) {
	return s.keys[user], nil
}
func (s *teamStore) AddMember(context.Context, string, string, bool) error { return s.addErr }
func (s *teamStore) RemoveMember(_ context.Context, _, user string) error {
	if user == "ghost" {
		return teams.ErrNotFound
	}
	return nil
}
func (s *teamStore) RevokeKey(_ context.Context, user, id string) error {
	for _, k := range s.keys[user] {
		if k.ID == id {
			s.revoked = append(s.revoked, id)
			return nil
		}
	}
	return keys.ErrNoSuchKey
}
func (s *teamStore) CreateKey(_ context.Context, user string, _ NewKey) (string, Key, error) {
	s.created = append(s.created, user)
	return "sk-new", Key{User: user}, nil
}

// TestTeamAdminActsOnItsTeamOnly: a team admin's calls reach the members
// of the team the admin administers and nobody else, and the refusals
// are the console's (ErrNotFound, ErrInvalid).
func TestTeamAdminActsOnItsTeamOnly(t *testing.T) {
	now := time.Now()
	st := &teamStore{
		teams: []teams.Team{
			{Name: "red", Members: []teams.Member{{User: "ann", Admin: true}, {User: "bob"}}},
			{Name: "blue", Members: []teams.Member{{User: "cat", Admin: true}, {User: "dan"}}},
		},
		keys: map[string][]Key{
			"ann": {{ID: "k-ann", User: "ann", CreatedAt: now.Add(-time.Hour)}},
			"bob": {{ID: "k-bob", User: "bob", CreatedAt: now}},
			"dan": {{ID: "k-dan", User: "dan", CreatedAt: now}},
		},
	}
	s := TeamAdmin{Open: func() (TeamStore, error) { return st, nil }}
	ctx := context.Background()

	team, err := s.AdminTeam(ctx, "ann")
	if err != nil || team.Name != "red" || len(team.Keys) != 2 || team.Keys[0].ID != "k-bob" {
		t.Fatalf("AdminTeam(ann) = %+v, %v; want red with bob's key first (newest)", team, err)
	}
	if _, err := s.AdminTeam(ctx, "bob"); !errors.Is(err, ErrNotFound) {
		t.Errorf("AdminTeam of a plain member: %v, want ErrNotFound", err)
	}
	if err := s.RevokeKey(ctx, "ann", "k-dan"); !errors.Is(err, ErrNotFound) || len(st.revoked) != 0 {
		t.Errorf("revoking another team's key: %v (revoked %v), want ErrNotFound and nothing revoked", err, st.revoked)
	}
	if err := s.RevokeKey(ctx, "ann", "k-bob"); err != nil || len(st.revoked) != 1 {
		t.Errorf("revoking a member's key: %v (revoked %v)", err, st.revoked)
	}
	if _, _, err := s.CreateKey(ctx, "ann", "dan", NewKey{}); !errors.Is(err, ErrNotFound) || len(st.created) != 0 {
		t.Errorf("a key for another team's member: %v (created %v), want ErrNotFound", err, st.created)
	}
	if secret, _, err := s.CreateKey(ctx, "ann", "bob", NewKey{}); err != nil || secret != "sk-new" {
		t.Errorf("a key for a member: %q, %v", secret, err)
	}
	if err := s.RemoveMember(ctx, "ann", "ann"); !errors.Is(err, ErrInvalid) {
		t.Errorf("an admin removing itself: %v, want ErrInvalid", err)
	}
	if err := s.RemoveMember(ctx, "ann", "ghost"); !errors.Is(err, ErrNotFound) {
		t.Errorf("removing a non-member: %v, want ErrNotFound", err)
	}
	st.addErr = teams.ErrExists
	if err := s.AddMember(ctx, "ann", "dan", false); !errors.Is(err, ErrInvalid) ||
		err.Error() != "dan is a member of another team: an operator must remove them from it first" {
		t.Errorf("adding another team's member: %v", err)
	}
	if err := s.AddMember(ctx, "bob", "eve", false); !errors.Is(err, ErrNotFound) {
		t.Errorf("a plain member adding: %v, want ErrNotFound", err)
	}
	all, err := s.Teams(ctx)
	if err != nil || len(all) != 2 || all[1].Name != "blue" || len(all[1].Members) != 2 {
		t.Errorf("Teams = %+v, %v", all, err)
	}
}
