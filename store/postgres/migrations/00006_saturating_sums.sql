-- +goose Up
-- air_sat clamps a numeric to the range of bigint. The ledger's sums (its
-- aggregates, month totals and spend counters) add with it, so that a sum
-- past the largest bigint stays there instead of failing its batch with
-- "bigint out of range", which kept the batch queued and wedged the
-- ledger. A plain IMMUTABLE SQL function, not STRICT, so that PostgreSQL
-- inlines it into the statements that use it.
CREATE FUNCTION air_sat(n numeric) RETURNS bigint
	LANGUAGE sql IMMUTABLE PARALLEL SAFE
	AS $$SELECT least(greatest(n, -9223372036854775808), 9223372036854775807)::bigint$$;

-- +goose Down
DROP FUNCTION air_sat(numeric);
