-- +goose Up
-- The first schema of the shared backend.
CREATE TABLE air_meta (
	name  text PRIMARY KEY,
	value text NOT NULL
);

-- +goose Down
DROP TABLE air_meta;
