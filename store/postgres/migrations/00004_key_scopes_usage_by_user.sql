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

-- Every user's totals per month and currency (the users list), updated
-- with the daily aggregates; filled here from them.
CREATE TABLE air_usage_monthly (
	month             text NOT NULL,
	user_name         text NOT NULL,
	currency          text NOT NULL,
	requests          bigint NOT NULL,
	unpriced          bigint NOT NULL,
	input             bigint NOT NULL,
	cache_creation    bigint NOT NULL,
	cache_creation_1h bigint NOT NULL,
	cache_read        bigint NOT NULL,
	output            bigint NOT NULL,
	reasoning         bigint NOT NULL,
	images            bigint NOT NULL,
	video_ms          bigint NOT NULL,
	cost              bigint NOT NULL,
	PRIMARY KEY (month, user_name, currency)
);
INSERT INTO air_usage_monthly
	SELECT to_char(day, 'YYYY-MM'), user_name, currency, sum(requests), sum(unpriced), sum(input),
		sum(cache_creation), sum(cache_creation_1h), sum(cache_read), sum(output), sum(reasoning),
		sum(images), sum(video_ms), sum(cost)
	FROM air_usage GROUP BY 1, 2, 3;

-- +goose Down
DROP TABLE air_usage_monthly;
DROP INDEX air_ledger_user_seq;
DROP INDEX air_usage_user_day;
ALTER TABLE air_keys DROP COLUMN last_used, DROP COLUMN models;
