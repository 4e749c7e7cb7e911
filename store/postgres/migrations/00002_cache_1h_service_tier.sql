-- +goose Up
-- The 1-hour part of cache writes (billed at its own multiplier) and the
-- service tier the upstream reported, in records and aggregates.
ALTER TABLE air_ledger
	ADD COLUMN cache_creation_1h bigint NOT NULL DEFAULT 0,
	ADD COLUMN service_tier text NOT NULL DEFAULT '';
ALTER TABLE air_usage ADD COLUMN cache_creation_1h bigint NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE air_usage DROP COLUMN cache_creation_1h;
ALTER TABLE air_ledger DROP COLUMN service_tier, DROP COLUMN cache_creation_1h;
