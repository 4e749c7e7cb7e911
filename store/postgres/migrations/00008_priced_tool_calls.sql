-- +goose Up
-- The charges beyond plain tokens (issue #31): audio and image token
-- parts of input and output, and the provider's priced tool calls, in
-- records and aggregates; the charges a record's price had no rule for,
-- and how many records had such a charge.
ALTER TABLE air_ledger
	ADD COLUMN audio_input bigint NOT NULL DEFAULT 0,
	ADD COLUMN audio_output bigint NOT NULL DEFAULT 0,
	ADD COLUMN image_input bigint NOT NULL DEFAULT 0,
	ADD COLUMN image_output bigint NOT NULL DEFAULT 0,
	ADD COLUMN web_searches bigint NOT NULL DEFAULT 0,
	ADD COLUMN web_fetches bigint NOT NULL DEFAULT 0,
	ADD COLUMN file_searches bigint NOT NULL DEFAULT 0,
	ADD COLUMN code_sessions bigint NOT NULL DEFAULT 0,
	ADD COLUMN image_calls bigint NOT NULL DEFAULT 0,
	ADD COLUMN unpriced_charges text NOT NULL DEFAULT '';
ALTER TABLE air_usage
	ADD COLUMN audio_input bigint NOT NULL DEFAULT 0,
	ADD COLUMN audio_output bigint NOT NULL DEFAULT 0,
	ADD COLUMN image_input bigint NOT NULL DEFAULT 0,
	ADD COLUMN image_output bigint NOT NULL DEFAULT 0,
	ADD COLUMN web_searches bigint NOT NULL DEFAULT 0,
	ADD COLUMN web_fetches bigint NOT NULL DEFAULT 0,
	ADD COLUMN file_searches bigint NOT NULL DEFAULT 0,
	ADD COLUMN code_sessions bigint NOT NULL DEFAULT 0,
	ADD COLUMN image_calls bigint NOT NULL DEFAULT 0,
	ADD COLUMN unpriced_charges bigint NOT NULL DEFAULT 0;
ALTER TABLE air_usage_monthly
	ADD COLUMN audio_input bigint NOT NULL DEFAULT 0,
	ADD COLUMN audio_output bigint NOT NULL DEFAULT 0,
	ADD COLUMN image_input bigint NOT NULL DEFAULT 0,
	ADD COLUMN image_output bigint NOT NULL DEFAULT 0,
	ADD COLUMN web_searches bigint NOT NULL DEFAULT 0,
	ADD COLUMN web_fetches bigint NOT NULL DEFAULT 0,
	ADD COLUMN file_searches bigint NOT NULL DEFAULT 0,
	ADD COLUMN code_sessions bigint NOT NULL DEFAULT 0,
	ADD COLUMN image_calls bigint NOT NULL DEFAULT 0,
	ADD COLUMN unpriced_charges bigint NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE air_usage_monthly DROP COLUMN unpriced_charges, DROP COLUMN image_calls, DROP COLUMN code_sessions,
	DROP COLUMN file_searches, DROP COLUMN web_fetches, DROP COLUMN web_searches, DROP COLUMN image_output,
	DROP COLUMN image_input, DROP COLUMN audio_output, DROP COLUMN audio_input;
ALTER TABLE air_usage DROP COLUMN unpriced_charges, DROP COLUMN image_calls, DROP COLUMN code_sessions,
	DROP COLUMN file_searches, DROP COLUMN web_fetches, DROP COLUMN web_searches, DROP COLUMN image_output,
	DROP COLUMN image_input, DROP COLUMN audio_output, DROP COLUMN audio_input;
ALTER TABLE air_ledger DROP COLUMN unpriced_charges, DROP COLUMN image_calls, DROP COLUMN code_sessions,
	DROP COLUMN file_searches, DROP COLUMN web_fetches, DROP COLUMN web_searches, DROP COLUMN image_output,
	DROP COLUMN image_input, DROP COLUMN audio_output, DROP COLUMN audio_input;
