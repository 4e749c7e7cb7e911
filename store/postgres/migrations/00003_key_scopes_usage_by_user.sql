-- +goose Up
-- Key scopes and last use: the models (ids or globs) a key may use, empty
-- for every model, and when it last authenticated a request (written at
-- most once a minute per key).
ALTER TABLE air_keys
	ADD COLUMN models text[] NOT NULL DEFAULT '{}',
	ADD COLUMN last_used timestamptz;

-- One user's usage by day, key or model reads its own aggregates, not the
-- whole day's: the primary key starts with the day.
CREATE INDEX air_usage_user_day ON air_usage (user_name, day);

-- One user's ledger rows, page by page in the order they were written.
CREATE INDEX air_ledger_user_seq ON air_ledger (user_name, seq);

-- +goose Down
DROP INDEX air_ledger_user_seq;
DROP INDEX air_usage_user_day;
ALTER TABLE air_keys DROP COLUMN last_used, DROP COLUMN models;
