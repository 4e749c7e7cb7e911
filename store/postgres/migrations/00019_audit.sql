-- +goose Up
-- The audit trail (issue #32): one row per change an operator or user
-- made. The code only inserts and selects; the trigger below refuses any
-- UPDATE or DELETE, so that the table stays append-only even for a
-- client that writes SQL of its own (TRUNCATE by the table's owner
-- remains possible, as does dropping the trigger: a database superuser
-- is trusted).
CREATE TABLE air_audit (
    at_ns       bigint NOT NULL,
    id          text   NOT NULL,
    at          timestamptz NOT NULL,
    actor       text   NOT NULL,
    identity    text   NOT NULL DEFAULT '',
    via         text   NOT NULL,
    client_ip   text   NOT NULL DEFAULT '',
    action      text   NOT NULL,
    target_type text   NOT NULL,
    target_id   text   NOT NULL,
    before      jsonb,
    after       jsonb,
    PRIMARY KEY (at_ns, id)
);
CREATE INDEX air_audit_actor ON air_audit (actor, at_ns);
CREATE INDEX air_audit_target ON air_audit (target_id, at_ns);

-- +goose StatementBegin
CREATE FUNCTION air_audit_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'air_audit is append-only';
END;
$$;
-- +goose StatementEnd
CREATE TRIGGER air_audit_append_only BEFORE UPDATE OR DELETE ON air_audit
    FOR EACH ROW EXECUTE FUNCTION air_audit_append_only();

-- +goose Down
DROP TABLE air_audit;
DROP FUNCTION air_audit_append_only();
