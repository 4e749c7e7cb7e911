package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/caddy-air/caddy-air/store"
)

// Teams is the teams repository: air_teams and air_team_members, whose
// primary key on the user keeps a user in one team at most, across
// instances.
type Teams struct {
	db *DB
}

// Create implements store.Teams.
func (r *Teams) Create(ctx context.Context, t store.Team) error {
	models := t.Models
	if models == nil {
		models = []string{}
	}
	_, err := r.db.pool.Exec(ctx, `INSERT INTO air_teams (name, models, created_at) VALUES ($1, $2, $3)`, t.Name, models, t.CreatedAt)
	if isUniqueViolation(err) {
		return fmt.Errorf("team %s: %w", t.Name, store.ErrExists)
	}
	return err
}

// Get implements store.Teams.
func (r *Teams) Get(ctx context.Context, name string) (store.Team, error) {
	teams, err := r.list(ctx, name)
	if err != nil {
		return store.Team{}, err
	}
	if len(teams) == 0 {
		return store.Team{}, store.ErrNotFound
	}
	return teams[0], nil
}

// List implements store.Teams.
func (r *Teams) List(ctx context.Context) ([]store.Team, error) { return r.list(ctx, "") }

// list returns team name, or every team when name is "", sorted by name,
// with their members sorted by user, in one query.
func (r *Teams) list(ctx context.Context, name string) ([]store.Team, error) {
	rows, err := r.db.pool.Query(ctx, `SELECT t.name, t.models, t.created_at, t.log_requests, m.user_name, m.admin
		FROM air_teams t LEFT JOIN air_team_members m ON m.team = t.name
		WHERE $1 = '' OR t.name = $1
		ORDER BY t.name COLLATE "C", m.user_name COLLATE "C"`, name)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []store.Team
	for rows.Next() {
		var t store.Team
		var user *string
		var admin *bool
		if err := rows.Scan(&t.Name, &t.Models, &t.CreatedAt, &t.LogRequests, &user, &admin); err != nil {
			return nil, err
		}
		if n := len(out); n == 0 || out[n-1].Name != t.Name {
			t.CreatedAt = t.CreatedAt.UTC()
			if len(t.Models) == 0 {
				t.Models = nil
			}
			out = append(out, t)
		}
		if user != nil {
			last := &out[len(out)-1]
			last.Members = append(last.Members, store.Member{User: *user, Admin: *admin})
		}
	}
	return out, rows.Err()
}

// SetModels implements store.Teams.
func (r *Teams) SetModels(ctx context.Context, name string, models []string) error {
	if models == nil {
		models = []string{}
	}
	tag, err := r.db.pool.Exec(ctx, `UPDATE air_teams SET models = $2 WHERE name = $1`, name, models)
	if err == nil && tag.RowsAffected() == 0 {
		return store.ErrNotFound
	}
	return err
}

// SetLogRequests implements store.Teams.
func (r *Teams) SetLogRequests(ctx context.Context, name string, on bool) error {
	tag, err := r.db.pool.Exec(ctx, `UPDATE air_teams SET log_requests = $2 WHERE name = $1`, name, on)
	if err == nil && tag.RowsAffected() == 0 {
		return store.ErrNotFound
	}
	return err
}

// AddMember implements store.Teams. A member of another team keeps its
// row (the upsert's WHERE skips it), which reads as ErrExists.
func (r *Teams) AddMember(ctx context.Context, name, user string, admin bool) error {
	var team string
	err := r.db.pool.QueryRow(ctx, `INSERT INTO air_team_members (user_name, team, admin)
		SELECT $2, name, $3 FROM air_teams WHERE name = $1
		ON CONFLICT (user_name) DO UPDATE SET admin = EXCLUDED.admin WHERE air_team_members.team = EXCLUDED.team
		RETURNING team`, name, user, admin).Scan(&team)
	if !errors.Is(err, pgx.ErrNoRows) {
		return err
	}
	// No row: the team does not exist, or the user is in another one.
	var exists bool
	if err := r.db.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM air_teams WHERE name = $1)`, name).Scan(&exists); err != nil {
		return err
	}
	if !exists {
		return store.ErrNotFound
	}
	return fmt.Errorf("user %s is a member of another team: %w", user, store.ErrExists)
}

// RemoveMember implements store.Teams.
func (r *Teams) RemoveMember(ctx context.Context, name, user string) error {
	tag, err := r.db.pool.Exec(ctx, `DELETE FROM air_team_members WHERE team = $1 AND user_name = $2`, name, user)
	if err == nil && tag.RowsAffected() == 0 {
		return store.ErrNotFound
	}
	return err
}

// Interface guard.
var _ store.Teams = (*Teams)(nil)
