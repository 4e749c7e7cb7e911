-- +goose Up
-- Request logs (issue #32): the bodies of requests whose key or team has
-- request logging on, already capped and redacted, until they expire
-- (the retention job deletes expired rows; reads skip them before).
CREATE TABLE air_request_logs (
    request_id text PRIMARY KEY,
    key_id     text NOT NULL,
    usr        text NOT NULL,
    team       text NOT NULL DEFAULT '',
    at         timestamptz NOT NULL,
    expires    timestamptz NOT NULL,
    value      jsonb NOT NULL
);
CREATE INDEX air_request_logs_expires ON air_request_logs (expires);
-- The switch, per key and per team.
ALTER TABLE air_keys ADD COLUMN log_requests boolean NOT NULL DEFAULT false;
ALTER TABLE air_teams ADD COLUMN log_requests boolean NOT NULL DEFAULT false;

-- +goose Down
ALTER TABLE air_teams DROP COLUMN log_requests;
ALTER TABLE air_keys DROP COLUMN log_requests;
DROP TABLE air_request_logs;
