-- +goose Up
-- Teams and their members (issue #32). A user is a member of one team at
-- most: user_name is the members' key. A team's limits and spend are
-- air_limits and air_spend rows of scope 'team'.
CREATE TABLE air_teams (
	name       text PRIMARY KEY,
	models     text[] NOT NULL DEFAULT '{}',
	created_at timestamptz NOT NULL
);
CREATE TABLE air_team_members (
	user_name text PRIMARY KEY,
	team      text NOT NULL REFERENCES air_teams (name),
	admin     boolean NOT NULL DEFAULT false
);
CREATE INDEX air_team_members_team ON air_team_members (team, user_name);

-- +goose Down
DROP TABLE air_team_members;
DROP TABLE air_teams;
