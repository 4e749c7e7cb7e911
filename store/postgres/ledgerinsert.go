package postgres

import (
	"time"

	"github.com/caddy-air/caddy-air/store"
)

// insertLedger writes a batch of records and counts the new ones, in one
// statement and so one implicit transaction and one round trip: it
// inserts the records $1 (a JSON array of records as appendIntent writes
// them, whose zero fields are left out) in their order, skipping ids
// already present (also a repeated id within the batch), and adds the
// rows it inserted, and only those, to their aggregates (air_usage), their
// counts by outcome and usage source (air_usage_counts), their user's
// month (air_usage_monthly) and the spend counters of their user, key and
// team (air_spend, priced records with a cost only). It returns how many
// records were new. The days and months are UTC's, as store.KeyOf and
// store.MonthOf make them. Every sum saturates at the bounds of bigint
// (air_sat, of migration 00006, inlined by PostgreSQL) as store.AddSat
// does: a sum past them would fail the batch, and the batch, retried
// with every later one, would wedge the ledger.
//
// Each upsert writes its rows in key order (byte order, as Go sorts), so
// that concurrent batches of several instances lock them in the same
// order; the sub-statements run in the order they are written. One jsonb
// parameter costs pgx a copy where arrays of columns cost it an encoding
// per element, and the counts computed by the database from the inserted
// rows need no second round trip to learn which records were new.
const insertLedger = `WITH ins AS (
	INSERT INTO air_ledger (` + ledgerColumns + `)
	SELECT r->>'ID', coalesce((r->>'Time')::timestamptz, '0001-01-01T00:00:00Z'), coalesce(r->>'Endpoint', ''),
		coalesce(r->>'User', ''), coalesce(r->>'KeyID', ''), coalesce(r->>'Model', ''), coalesce(r->>'Provider', ''),
		coalesce((r->'Usage'->>'Input')::bigint, 0), coalesce((r->'Usage'->>'CacheCreation')::bigint, 0),
		coalesce((r->'Usage'->>'CacheRead')::bigint, 0), coalesce((r->'Usage'->>'Output')::bigint, 0),
		coalesce((r->'Usage'->>'Reasoning')::bigint, 0), coalesce(r->>'Source', ''), coalesce((r->>'Status')::int, 0),
		coalesce(r->>'Outcome', ''), coalesce((r->>'Images')::int, 0), coalesce((r->>'VideoMillis')::bigint, 0),
		coalesce((r->>'Tier')::int, 0), coalesce((r->>'Priced')::bool, false), coalesce(r->>'Currency', ''),
		coalesce((r->>'Cost')::bigint, 0), coalesce((r->'Usage'->>'CacheCreation1h')::bigint, 0),
		coalesce(r->>'ServiceTier', ''), coalesce(r->>'Deployment', ''), coalesce(r->>'ServedModel', ''),
		coalesce((r->'Usage'->>'AudioInput')::bigint, 0),
		coalesce((r->'Usage'->>'AudioOutput')::bigint, 0),
		coalesce((r->'Usage'->>'ImageInput')::bigint, 0),
		coalesce((r->'Usage'->>'ImageOutput')::bigint, 0),
		coalesce((r->'Usage'->>'WebSearches')::bigint, 0),
		coalesce((r->'Usage'->>'WebFetches')::bigint, 0),
		coalesce((r->'Usage'->>'FileSearches')::bigint, 0),
		coalesce((r->'Usage'->>'CodeSessions')::bigint, 0),
		coalesce((r->'Usage'->>'ImageCalls')::bigint, 0),
		coalesce(r->>'Unpriced', ''), coalesce((r->>'DurationMillis')::bigint, 0),
		coalesce((r->'Usage'->>'Characters')::bigint, 0), coalesce((r->'Usage'->>'AudioMillis')::bigint, 0),
		coalesce((r->'Usage'->>'SearchUnits')::bigint, 0),
		coalesce(r->>'Team', ''), coalesce(r->>'Tags', '')
	FROM jsonb_array_elements($1::jsonb) WITH ORDINALITY AS x(r, n) ORDER BY n
	ON CONFLICT (id) DO NOTHING
	RETURNING ts, user_name, key_id, model, currency, priced, input, cache_creation, cache_creation_1h, cache_read,
		output, reasoning, images, video_ms, cost, source, outcome, audio_input, audio_output, image_input, image_output, web_searches, web_fetches, file_searches, code_sessions, image_calls, unpriced_charges,
		characters, audio_ms, search_units, team),
k AS (
	SELECT (ts AT TIME ZONE 'UTC')::date AS day, to_char(ts AT TIME ZONE 'UTC', 'YYYY-MM') AS month, * FROM ins),
u AS (
	INSERT INTO air_usage AS u (day, user_name, key_id, model, currency, requests, unpriced,
		input, cache_creation, cache_read, output, reasoning, images, video_ms, cost, cache_creation_1h,
		audio_input, audio_output, image_input, image_output, web_searches, web_fetches, file_searches, code_sessions, image_calls, unpriced_charges,
		characters, audio_ms, search_units)
	SELECT day, user_name, key_id, model, currency, count(*), count(*) FILTER (WHERE NOT priced),
		air_sat(sum(input)), air_sat(sum(cache_creation)), air_sat(sum(cache_read)), air_sat(sum(output)),
		air_sat(sum(reasoning)), air_sat(sum(images)), air_sat(sum(video_ms)), air_sat(sum(cost)),
		air_sat(sum(cache_creation_1h)), air_sat(sum(audio_input)), air_sat(sum(audio_output)), air_sat(sum(image_input)), air_sat(sum(image_output)), air_sat(sum(web_searches)), air_sat(sum(web_fetches)), air_sat(sum(file_searches)), air_sat(sum(code_sessions)), air_sat(sum(image_calls)),
		count(*) FILTER (WHERE unpriced_charges <> ''),
		air_sat(sum(characters)), air_sat(sum(audio_ms)), air_sat(sum(search_units))
	FROM k GROUP BY day, user_name, key_id, model, currency
	ORDER BY day, user_name COLLATE "C", key_id COLLATE "C", model COLLATE "C", currency COLLATE "C"
	ON CONFLICT (day, user_name, key_id, model, currency) DO UPDATE SET
		requests = air_sat(u.requests::numeric + EXCLUDED.requests),
		unpriced = air_sat(u.unpriced::numeric + EXCLUDED.unpriced),
		input = air_sat(u.input::numeric + EXCLUDED.input),
		cache_creation = air_sat(u.cache_creation::numeric + EXCLUDED.cache_creation),
		cache_read = air_sat(u.cache_read::numeric + EXCLUDED.cache_read),
		output = air_sat(u.output::numeric + EXCLUDED.output),
		reasoning = air_sat(u.reasoning::numeric + EXCLUDED.reasoning),
		images = air_sat(u.images::numeric + EXCLUDED.images),
		video_ms = air_sat(u.video_ms::numeric + EXCLUDED.video_ms),
		cost = air_sat(u.cost::numeric + EXCLUDED.cost),
		cache_creation_1h = air_sat(u.cache_creation_1h::numeric + EXCLUDED.cache_creation_1h),
		audio_input = air_sat(u.audio_input::numeric + EXCLUDED.audio_input),
		audio_output = air_sat(u.audio_output::numeric + EXCLUDED.audio_output),
		image_input = air_sat(u.image_input::numeric + EXCLUDED.image_input),
		image_output = air_sat(u.image_output::numeric + EXCLUDED.image_output),
		web_searches = air_sat(u.web_searches::numeric + EXCLUDED.web_searches),
		web_fetches = air_sat(u.web_fetches::numeric + EXCLUDED.web_fetches),
		file_searches = air_sat(u.file_searches::numeric + EXCLUDED.file_searches),
		code_sessions = air_sat(u.code_sessions::numeric + EXCLUDED.code_sessions),
		image_calls = air_sat(u.image_calls::numeric + EXCLUDED.image_calls),
		unpriced_charges = air_sat(u.unpriced_charges::numeric + EXCLUDED.unpriced_charges),
		characters = air_sat(u.characters::numeric + EXCLUDED.characters),
		audio_ms = air_sat(u.audio_ms::numeric + EXCLUDED.audio_ms),
		search_units = air_sat(u.search_units::numeric + EXCLUDED.search_units)),
c AS (
	INSERT INTO air_usage_counts AS c (day, user_name, key_id, model, currency, kind, name, n)
	SELECT day, user_name, key_id, model, currency, v.kind, v.name, count(*)
	FROM k CROSS JOIN LATERAL (VALUES ('o'::"char", outcome), ('s'::"char", source)) AS v(kind, name)
	WHERE v.name <> ''
	GROUP BY day, user_name, key_id, model, currency, v.kind, v.name
	ORDER BY day, user_name COLLATE "C", key_id COLLATE "C", model COLLATE "C", currency COLLATE "C", v.kind,
		v.name COLLATE "C"
	ON CONFLICT (day, user_name, key_id, model, currency, kind, name) DO UPDATE SET
		n = air_sat(c.n::numeric + EXCLUDED.n)),
m AS (
	INSERT INTO air_usage_monthly AS u (month, user_name, currency, requests, unpriced, input, cache_creation,
		cache_creation_1h, cache_read, output, reasoning, images, video_ms, cost, audio_input, audio_output, image_input, image_output, web_searches, web_fetches, file_searches, code_sessions, image_calls, unpriced_charges,
		characters, audio_ms, search_units)
	SELECT month, user_name, currency, count(*), count(*) FILTER (WHERE NOT priced), air_sat(sum(input)),
		air_sat(sum(cache_creation)), air_sat(sum(cache_creation_1h)), air_sat(sum(cache_read)),
		air_sat(sum(output)), air_sat(sum(reasoning)), air_sat(sum(images)), air_sat(sum(video_ms)),
		air_sat(sum(cost)), air_sat(sum(audio_input)), air_sat(sum(audio_output)), air_sat(sum(image_input)), air_sat(sum(image_output)), air_sat(sum(web_searches)), air_sat(sum(web_fetches)), air_sat(sum(file_searches)), air_sat(sum(code_sessions)), air_sat(sum(image_calls)),
		count(*) FILTER (WHERE unpriced_charges <> ''),
		air_sat(sum(characters)), air_sat(sum(audio_ms)), air_sat(sum(search_units))
	FROM k GROUP BY month, user_name, currency
	ORDER BY month, user_name COLLATE "C", currency COLLATE "C"
	ON CONFLICT (month, user_name, currency) DO UPDATE SET
		requests = air_sat(u.requests::numeric + EXCLUDED.requests),
		unpriced = air_sat(u.unpriced::numeric + EXCLUDED.unpriced),
		input = air_sat(u.input::numeric + EXCLUDED.input),
		cache_creation = air_sat(u.cache_creation::numeric + EXCLUDED.cache_creation),
		cache_creation_1h = air_sat(u.cache_creation_1h::numeric + EXCLUDED.cache_creation_1h),
		cache_read = air_sat(u.cache_read::numeric + EXCLUDED.cache_read),
		output = air_sat(u.output::numeric + EXCLUDED.output),
		reasoning = air_sat(u.reasoning::numeric + EXCLUDED.reasoning),
		images = air_sat(u.images::numeric + EXCLUDED.images),
		video_ms = air_sat(u.video_ms::numeric + EXCLUDED.video_ms),
		cost = air_sat(u.cost::numeric + EXCLUDED.cost),
		audio_input = air_sat(u.audio_input::numeric + EXCLUDED.audio_input),
		audio_output = air_sat(u.audio_output::numeric + EXCLUDED.audio_output),
		image_input = air_sat(u.image_input::numeric + EXCLUDED.image_input),
		image_output = air_sat(u.image_output::numeric + EXCLUDED.image_output),
		web_searches = air_sat(u.web_searches::numeric + EXCLUDED.web_searches),
		web_fetches = air_sat(u.web_fetches::numeric + EXCLUDED.web_fetches),
		file_searches = air_sat(u.file_searches::numeric + EXCLUDED.file_searches),
		code_sessions = air_sat(u.code_sessions::numeric + EXCLUDED.code_sessions),
		image_calls = air_sat(u.image_calls::numeric + EXCLUDED.image_calls),
		unpriced_charges = air_sat(u.unpriced_charges::numeric + EXCLUDED.unpriced_charges),
		characters = air_sat(u.characters::numeric + EXCLUDED.characters),
		audio_ms = air_sat(u.audio_ms::numeric + EXCLUDED.audio_ms),
		search_units = air_sat(u.search_units::numeric + EXCLUDED.search_units)),
s AS (
	INSERT INTO air_spend AS s (scope, subject, currency, period, amount)
	SELECT v.scope, v.subject, currency, p.period, air_sat(sum(cost))
	FROM k CROSS JOIN LATERAL (VALUES ('` + string(store.ScopeUser) + `', user_name), ('` + string(store.ScopeKey) + `', key_id),
		('` + string(store.ScopeTeam) + `', team)) AS v(scope, subject)
		CROSS JOIN LATERAL (VALUES (month), ('` + store.PeriodTotal + `')) AS p(period)
	WHERE priced AND cost <> 0 AND v.subject <> ''
	GROUP BY v.scope, v.subject, currency, p.period
	ORDER BY v.scope COLLATE "C", v.subject COLLATE "C", currency COLLATE "C", p.period COLLATE "C"
	ON CONFLICT (scope, subject, currency, period) DO UPDATE SET amount = air_sat(s.amount::numeric + EXCLUDED.amount))
SELECT count(*) FROM ins`

// appendLedgerRecords appends recs to b as the JSON array that
// insertLedger reads. Their times are cut to the microsecond first, as
// PostgreSQL keeps them (it would round the text of a finer time, which
// could move a record to the next day; pgx cut it before).
func appendLedgerRecords(b []byte, recs []store.Record) []byte {
	b = append(b, '[')
	for i := range recs {
		if i > 0 {
			b = append(b, ',')
		}
		r := &recs[i]
		if r.Time.Nanosecond()%1000 == 0 {
			b = appendIntent(b, r)
			continue
		}
		c := *r
		c.Time = c.Time.Truncate(time.Microsecond)
		b = appendIntent(b, &c)
	}
	return append(b, ']')
}
