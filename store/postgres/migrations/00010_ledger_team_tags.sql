-- +goose Up
-- The team of a record's user when it was admitted, and the request's
-- tags, comma-separated (issue #32); "" for records written before.
-- Spend of scope 'team' is counted in air_spend like a user's or key's.
ALTER TABLE air_ledger ADD COLUMN team text NOT NULL DEFAULT '';
ALTER TABLE air_ledger ADD COLUMN tags text NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE air_ledger DROP COLUMN tags;
ALTER TABLE air_ledger DROP COLUMN team;
