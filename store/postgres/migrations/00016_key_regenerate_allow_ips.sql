-- +goose Up
-- Keys regenerated with a grace period keep their previous secret's hash
-- until prev_until (issue #32), and keys may be bound to client networks.
ALTER TABLE air_keys ADD COLUMN prev_hash text;
ALTER TABLE air_keys ADD COLUMN prev_until timestamptz;
ALTER TABLE air_keys ADD COLUMN allow_ips text[] NOT NULL DEFAULT '{}';
CREATE UNIQUE INDEX air_keys_prev_hash ON air_keys (prev_hash) WHERE prev_hash IS NOT NULL;

-- +goose Down
DROP INDEX air_keys_prev_hash;
ALTER TABLE air_keys DROP COLUMN allow_ips;
ALTER TABLE air_keys DROP COLUMN prev_until;
ALTER TABLE air_keys DROP COLUMN prev_hash;
