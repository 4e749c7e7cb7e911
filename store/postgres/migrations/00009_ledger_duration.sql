-- +goose Up
-- How long each request took, in milliseconds, from its arrival until its
-- answer ended (issue #35); 0 for records written before, not measured.
ALTER TABLE air_ledger ADD COLUMN duration_ms bigint NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE air_ledger DROP COLUMN duration_ms;
