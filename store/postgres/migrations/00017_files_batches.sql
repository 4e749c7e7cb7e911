-- +goose Up
-- Files users upload (/v1/files) and batches (/v1/batches), kept as tasks
-- are: the document is opaque; the columns are what claims and lists need.
-- A file's bytes are in air_media.
CREATE TABLE air_files (
	id        text PRIMARY KEY,
	user_name text NOT NULL,
	created   timestamptz NOT NULL,
	expires   timestamptz NOT NULL,
	working   boolean NOT NULL,
	due       timestamptz NOT NULL,
	data      bytea NOT NULL
);
CREATE INDEX air_files_user ON air_files (user_name, created DESC);
CREATE INDEX air_files_due ON air_files (due) WHERE working;
CREATE INDEX air_files_expires ON air_files (expires);

CREATE TABLE air_batches (
	id        text PRIMARY KEY,
	user_name text NOT NULL,
	created   timestamptz NOT NULL,
	expires   timestamptz NOT NULL,
	working   boolean NOT NULL,
	due       timestamptz NOT NULL,
	data      bytea NOT NULL
);
CREATE INDEX air_batches_user ON air_batches (user_name, created DESC);
CREATE INDEX air_batches_due ON air_batches (due) WHERE working;
CREATE INDEX air_batches_expires ON air_batches (expires);

-- +goose Down
DROP TABLE air_batches;
DROP TABLE air_files;
