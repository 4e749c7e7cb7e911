-- +goose Up
-- The shared backend's first schema: one table (or two) per repository of
-- package store. Amounts are int64 nano units of their currency.

-- Keys: lookups go by the hash of the secret.
CREATE TABLE air_keys (
	id          text PRIMARY KEY,
	hash        text NOT NULL UNIQUE,
	user_name   text NOT NULL,
	name        text NOT NULL DEFAULT '',
	created_at  timestamptz NOT NULL,
	expires_at  timestamptz,
	revoked_at  timestamptz,
	-- when the revocation was committed, by the database's clock: an
	-- instance whose notification connection broke re-reads from here.
	revoked_seen timestamptz
);
CREATE INDEX air_keys_user ON air_keys (user_name, created_at);
CREATE INDEX air_keys_revoked_seen ON air_keys (revoked_seen) WHERE revoked_seen IS NOT NULL;

-- Ledger: one row per settled request or task, idempotent on its id.
CREATE TABLE air_ledger (
	seq            bigint GENERATED ALWAYS AS IDENTITY,
	id             text PRIMARY KEY,
	-- when the row was written: retention goes by it
	written        timestamptz NOT NULL DEFAULT now(),
	ts             timestamptz NOT NULL,
	endpoint       text NOT NULL,
	user_name      text NOT NULL,
	key_id         text NOT NULL,
	model          text NOT NULL,
	provider       text NOT NULL,
	input          bigint NOT NULL,
	cache_creation bigint NOT NULL,
	cache_read     bigint NOT NULL,
	output         bigint NOT NULL,
	reasoning      bigint NOT NULL,
	source         text NOT NULL,
	status         integer NOT NULL,
	outcome        text NOT NULL,
	images         integer NOT NULL,
	video_ms       bigint NOT NULL,
	tier           integer NOT NULL,
	priced         boolean NOT NULL,
	currency       text NOT NULL,
	cost           bigint NOT NULL
);
CREATE INDEX air_ledger_seq ON air_ledger (seq);
CREATE INDEX air_ledger_ts ON air_ledger (ts);
CREATE INDEX air_ledger_written ON air_ledger (written);

-- Aggregates of the ledger per day, user, key, model and currency, updated
-- in the transaction that inserts the records they count.
CREATE TABLE air_usage (
	day            date NOT NULL,
	user_name      text NOT NULL,
	key_id         text NOT NULL,
	model          text NOT NULL,
	currency       text NOT NULL,
	requests       bigint NOT NULL,
	unpriced       bigint NOT NULL,
	input          bigint NOT NULL,
	cache_creation bigint NOT NULL,
	cache_read     bigint NOT NULL,
	output         bigint NOT NULL,
	reasoning      bigint NOT NULL,
	images         bigint NOT NULL,
	video_ms       bigint NOT NULL,
	cost           bigint NOT NULL,
	PRIMARY KEY (day, user_name, key_id, model, currency)
);
-- Counts of an aggregate's records by usage source (kind 's') and
-- outcome (kind 'o').
CREATE TABLE air_usage_counts (
	day       date NOT NULL,
	user_name text NOT NULL,
	key_id    text NOT NULL,
	model     text NOT NULL,
	currency  text NOT NULL,
	kind      "char" NOT NULL,
	name      text NOT NULL,
	n         bigint NOT NULL,
	PRIMARY KEY (day, user_name, key_id, model, currency, kind, name)
);

-- Spend counters per subject, currency and period (a month YYYY-MM or
-- 'total'), updated with the records.
CREATE TABLE air_spend (
	scope    text NOT NULL,
	subject  text NOT NULL,
	currency text NOT NULL,
	period   text NOT NULL,
	amount   bigint NOT NULL,
	PRIMARY KEY (scope, subject, currency, period)
);

-- Limits per subject; a Reserve locks its subject's row.
CREATE TABLE air_limits (
	scope    text NOT NULL,
	subject  text NOT NULL,
	currency text NOT NULL,
	monthly  bigint NOT NULL,
	total    bigint NOT NULL,
	rpm      bigint NOT NULL,
	tpm      bigint NOT NULL,
	PRIMARY KEY (scope, subject)
);

-- Leases on budgets: unexpired ones count against the budget like spend.
CREATE TABLE air_leases (
	id       text PRIMARY KEY,
	scope    text NOT NULL,
	subject  text NOT NULL,
	currency text NOT NULL,
	amount   bigint NOT NULL,
	expires  timestamptz NOT NULL
);
CREATE INDEX air_leases_subject ON air_leases (scope, subject, currency, expires);

-- Token buckets of the rate limits.
CREATE TABLE air_buckets (
	key   text PRIMARY KEY,
	level double precision NOT NULL,
	at    timestamptz NOT NULL
);

-- Tasks: the document is opaque; the columns are what claims and lists
-- need.
CREATE TABLE air_tasks (
	id        text PRIMARY KEY,
	user_name text NOT NULL,
	created   timestamptz NOT NULL,
	expires   timestamptz NOT NULL,
	working   boolean NOT NULL,
	due       timestamptz NOT NULL,
	data      bytea NOT NULL
);
CREATE INDEX air_tasks_user ON air_tasks (user_name, created DESC);
CREATE INDEX air_tasks_due ON air_tasks (due) WHERE working;
CREATE INDEX air_tasks_expires ON air_tasks (expires);

-- Media: a file's metadata, and its bytes in chunks.
CREATE TABLE air_media (
	id           text PRIMARY KEY,
	content_type text NOT NULL,
	size         bigint NOT NULL,
	sha256       text NOT NULL,
	created      timestamptz NOT NULL,
	expires      timestamptz NOT NULL,
	chunk_size   integer NOT NULL
);
CREATE INDEX air_media_expires ON air_media (expires);
CREATE TABLE air_media_chunks (
	id   text NOT NULL REFERENCES air_media (id) ON DELETE CASCADE,
	n    integer NOT NULL,
	data bytea NOT NULL,
	PRIMARY KEY (id, n)
);
-- Media are mostly compressed already (PNG, JPEG, MP4): no compression
-- attempts.
ALTER TABLE air_media_chunks ALTER COLUMN data SET STORAGE EXTERNAL;

-- Response-id mappings.
CREATE TABLE air_responses (
	id      text PRIMARY KEY,
	value   bytea NOT NULL,
	expires timestamptz NOT NULL
);

-- Gateway instances, each with a lease it renews while it runs; the
-- intents of an instance whose lease expired are taken over.
CREATE TABLE air_instances (
	id      text PRIMARY KEY,
	started timestamptz NOT NULL,
	expires timestamptz NOT NULL
);

-- Intents of requests in flight: the record each would leave if its
-- instance died before settling it.
CREATE TABLE air_intents (
	seq      bigint GENERATED ALWAYS AS IDENTITY,
	id       text PRIMARY KEY,
	instance text NOT NULL,
	record   jsonb NOT NULL
);
CREATE INDEX air_intents_instance ON air_intents (instance);

-- +goose Down
DROP TABLE air_intents, air_instances, air_responses, air_media_chunks, air_media,
	air_tasks, air_buckets, air_leases, air_limits, air_spend, air_usage_counts,
	air_usage, air_ledger, air_keys;
