-- +goose Up
-- The quantities of the speech, transcription and rerank endpoints (issue
-- #33) in records and aggregates: input characters, audio milliseconds,
-- search units.
ALTER TABLE air_ledger
	ADD COLUMN characters bigint NOT NULL DEFAULT 0,
	ADD COLUMN audio_ms bigint NOT NULL DEFAULT 0,
	ADD COLUMN search_units bigint NOT NULL DEFAULT 0;
ALTER TABLE air_usage
	ADD COLUMN characters bigint NOT NULL DEFAULT 0,
	ADD COLUMN audio_ms bigint NOT NULL DEFAULT 0,
	ADD COLUMN search_units bigint NOT NULL DEFAULT 0;
ALTER TABLE air_usage_monthly
	ADD COLUMN characters bigint NOT NULL DEFAULT 0,
	ADD COLUMN audio_ms bigint NOT NULL DEFAULT 0,
	ADD COLUMN search_units bigint NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE air_usage_monthly DROP COLUMN search_units, DROP COLUMN audio_ms, DROP COLUMN characters;
ALTER TABLE air_usage DROP COLUMN search_units, DROP COLUMN audio_ms, DROP COLUMN characters;
ALTER TABLE air_ledger DROP COLUMN search_units, DROP COLUMN audio_ms, DROP COLUMN characters;
