-- +goose Up
-- The outbox of alerts (issue #32): each raised event once (its id is the
-- dedupe id), and its delivery to each webhook, leased to one instance at
-- a time so that every event is delivered once across instances.
CREATE TABLE air_alert_events (
	id      text PRIMARY KEY,
	seq     bigserial NOT NULL,
	kind    text NOT NULL,
	at      timestamptz NOT NULL,
	message text NOT NULL,
	data    jsonb NOT NULL DEFAULT '{}'
);
CREATE INDEX air_alert_events_seq ON air_alert_events (seq);
CREATE INDEX air_alert_events_at ON air_alert_events (at);

CREATE TABLE air_alert_deliveries (
	event_id    text NOT NULL REFERENCES air_alert_events (id) ON DELETE CASCADE,
	target      text NOT NULL,
	state       text NOT NULL,
	attempts    integer NOT NULL DEFAULT 0,
	last_error  text NOT NULL DEFAULT '',
	done_at     timestamptz,
	lease_owner text,
	lease_until timestamptz,
	PRIMARY KEY (event_id, target)
);
CREATE INDEX air_alert_deliveries_pending ON air_alert_deliveries (event_id) WHERE state = 'pending';

-- +goose Down
DROP TABLE air_alert_deliveries;
DROP TABLE air_alert_events;
