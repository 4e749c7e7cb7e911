package badger

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/caddy-air/caddy-air/store"
)

// Teams is the teams repository on a DB: each team is one JSON value
// (with its members) under t/t/<name>, and each member has an index entry
// t/m/<user> holding its team's name, so that a user joins one team at
// most. Every change is one transaction over both.
type Teams struct{ db KV }

// NewTeams returns the teams repository of db.
func NewTeams(db KV) *Teams { return &Teams{db: db} }

// Keys of teams.
const (
	prefixTeams       = "t/t/"
	prefixTeamMembers = "t/m/"
)

// teamJSON is a team's stored value.
type teamJSON struct {
	Models    []string       `json:"models,omitempty"`
	CreatedAt time.Time      `json:"created_at"`
	Members   []store.Member `json:"members,omitempty"`
	// LogRequests is the request-log switch.
	LogRequests bool `json:"log_requests,omitempty"`
}

func teamKey(name string) []byte   { return []byte(prefixTeams + esc(name)) }
func memberKey(user string) []byte { return []byte(prefixTeamMembers + esc(user)) }

// Create implements store.Teams.
func (r *Teams) Create(ctx context.Context, t store.Team) error {
	val, err := json.Marshal(teamJSON{Models: t.Models, CreatedAt: t.CreatedAt.UTC()})
	if err != nil {
		return err
	}
	return r.db.Update(ctx, func(txn Txn) error {
		if _, err := txn.Get(teamKey(t.Name)); err == nil {
			return store.ErrExists
		} else if !errors.Is(err, store.ErrNotFound) {
			return err
		}
		return txn.Set(teamKey(t.Name), val, 0)
	})
}

// Get implements store.Teams.
func (r *Teams) Get(ctx context.Context, name string) (store.Team, error) {
	v, err := r.db.Get(ctx, teamKey(name))
	if err != nil {
		return store.Team{}, err
	}
	return decodeTeam(name, v)
}

// decodeTeam decodes the stored value of team name.
func decodeTeam(name string, v []byte) (store.Team, error) {
	var j teamJSON
	if err := json.Unmarshal(v, &j); err != nil {
		return store.Team{}, fmt.Errorf("decoding team %q: %w", name, err)
	}
	return store.Team{Name: name, Models: j.Models, CreatedAt: j.CreatedAt, Members: j.Members, LogRequests: j.LogRequests}, nil
}

// List implements store.Teams.
func (r *Teams) List(ctx context.Context) ([]store.Team, error) {
	var out []store.Team
	err := r.db.Scan(ctx, []byte(prefixTeams), ScanOptions{}, func(k, v []byte) error {
		t, err := decodeTeam(unesc(string(k[len(prefixTeams):])), v)
		out = append(out, t)
		return err
	})
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, err
}

// edit runs fn on team name's stored value within one transaction and
// stores what fn leaves.
func (r *Teams) edit(ctx context.Context, name string, fn func(txn Txn, j *teamJSON) error) error {
	return r.db.Update(ctx, func(txn Txn) error {
		v, err := txn.Get(teamKey(name))
		if err != nil {
			return err
		}
		var j teamJSON
		if err := json.Unmarshal(v, &j); err != nil {
			return fmt.Errorf("decoding team %q: %w", name, err)
		}
		if err := fn(txn, &j); err != nil {
			return err
		}
		val, err := json.Marshal(j)
		if err != nil {
			return err
		}
		return txn.Set(teamKey(name), val, 0)
	})
}

// SetModels implements store.Teams.
func (r *Teams) SetModels(ctx context.Context, name string, models []string) error {
	return r.edit(ctx, name, func(_ Txn, j *teamJSON) error {
		j.Models = models
		return nil
	})
}

// SetLogRequests implements store.Teams.
func (r *Teams) SetLogRequests(ctx context.Context, name string, on bool) error {
	return r.edit(ctx, name, func(_ Txn, j *teamJSON) error {
		j.LogRequests = on
		return nil
	})
}

// AddMember implements store.Teams.
func (r *Teams) AddMember(ctx context.Context, name, user string, admin bool) error {
	return r.edit(ctx, name, func(txn Txn, j *teamJSON) error {
		v, err := txn.Get(memberKey(user))
		switch {
		case err == nil && string(v) != name:
			return store.ErrExists
		case err != nil && !errors.Is(err, store.ErrNotFound):
			return err
		}
		i := sort.Search(len(j.Members), func(i int) bool { return j.Members[i].User >= user })
		if i < len(j.Members) && j.Members[i].User == user {
			j.Members[i].Admin = admin
			return nil
		}
		j.Members = append(j.Members, store.Member{})
		copy(j.Members[i+1:], j.Members[i:])
		j.Members[i] = store.Member{User: user, Admin: admin}
		return txn.Set(memberKey(user), []byte(name), 0)
	})
}

// RemoveMember implements store.Teams.
func (r *Teams) RemoveMember(ctx context.Context, name, user string) error {
	return r.edit(ctx, name, func(txn Txn, j *teamJSON) error {
		i := sort.Search(len(j.Members), func(i int) bool { return j.Members[i].User >= user })
		if i == len(j.Members) || j.Members[i].User != user {
			return store.ErrNotFound
		}
		j.Members = append(j.Members[:i], j.Members[i+1:]...)
		return txn.Delete(memberKey(user))
	})
}

// Interface guard.
var _ store.Teams = (*Teams)(nil)
