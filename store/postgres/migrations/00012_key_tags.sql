-- +goose Up
-- A key's default tags (issue #32): the tags of its requests that send no
-- x-air-tags header.
ALTER TABLE air_keys ADD COLUMN tags text[] NOT NULL DEFAULT '{}';

-- +goose Down
ALTER TABLE air_keys DROP COLUMN tags;
