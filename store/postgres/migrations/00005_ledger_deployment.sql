-- +goose Up
-- The deployment that answered a request ("provider/upstream model") and,
-- for a fallback, the model that served it (issue #19).
ALTER TABLE air_ledger
	ADD COLUMN deployment text NOT NULL DEFAULT '',
	ADD COLUMN served_model text NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE air_ledger DROP COLUMN served_model, DROP COLUMN deployment;
