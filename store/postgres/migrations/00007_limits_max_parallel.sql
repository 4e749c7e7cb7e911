-- +goose Up
-- max_parallel bounds a subject's requests in flight at once, per
-- instance (billing.Limits.MaxParallel); 0 is no bound.
ALTER TABLE air_limits ADD COLUMN max_parallel bigint NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE air_limits DROP COLUMN max_parallel;
