-- +goose Up
-- Background responses the gateway polls until it can bill them: a
-- pending mapping has a due time (the end of its claim's lease while
-- claimed); NULL when nothing is pending.
ALTER TABLE air_responses ADD COLUMN due timestamptz;
CREATE INDEX air_responses_due ON air_responses (due) WHERE due IS NOT NULL;

-- +goose Down
DROP INDEX air_responses_due;
ALTER TABLE air_responses DROP COLUMN due;
