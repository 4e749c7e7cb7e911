package postgres

import (
	"context"
	"errors"
	"sort"

	"github.com/jackc/pgx/v5"

	"github.com/caddy-air/caddy-air/store"
)

// queueCounts queues on batch the statements that add recs to their
// aggregates, source and outcome counts and spend counters. Rows are
// upserted in key order, so concurrent transactions lock them in the
// same order and cannot deadlock on them.
func queueCounts(batch *pgx.Batch, recs []store.Record) {
	if len(recs) == 0 {
		return
	}
	aggs := map[store.AggregateKey]*store.Totals{}
	spend := map[store.Spend]int64{}
	for i := range recs {
		r := &recs[i]
		k := store.KeyOf(r)
		t := aggs[k]
		if t == nil {
			t = new(store.Totals)
			aggs[k] = t
		}
		t.Add(r)
		if !r.Priced || r.Cost == 0 {
			continue
		}
		for _, sub := range [...]store.Subject{{Scope: store.ScopeUser, ID: r.User}, {Scope: store.ScopeKey, ID: r.KeyID}} {
			if sub.ID == "" {
				continue
			}
			for _, period := range [...]string{store.MonthOf(r.Time), store.PeriodTotal} {
				spend[store.Spend{Subject: sub, Currency: r.Currency, Period: period}] += r.Cost
			}
		}
	}
	keys := make([]store.AggregateKey, 0, len(aggs))
	for k := range aggs {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return aggLess(keys[i], keys[j]) })

	var (
		n                                                                    = len(keys)
		days, users, keyIDs, models, currencies                              = make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		requests, unpriced, input, cc, cr, output, reasoning, images, vid, c = make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n)
		cc1h                                                                 = make([]int64, n)
		// the counts by source and outcome
		cDays, cUsers, cKeyIDs, cModels, cCurrencies, cKinds, cNames []string
		cN                                                           []int64
	)
	for i, k := range keys {
		t := aggs[k]
		days[i], users[i], keyIDs[i], models[i], currencies[i] = k.Day, k.User, k.KeyID, k.Model, k.Currency
		requests[i], unpriced[i], images[i], vid[i], c[i] = t.Requests, t.Unpriced, t.Images, t.VideoMillis, t.Cost
		input[i], cc[i], cr[i], output[i], reasoning[i] = t.Usage.Input, t.Usage.CacheCreation, t.Usage.CacheRead, t.Usage.Output, t.Usage.Reasoning
		cc1h[i] = t.Usage.CacheCreation1h
		for _, kind := range [...]struct {
			code string
			m    map[string]int64
		}{{"o", t.Outcomes}, {"s", t.Sources}} {
			names := make([]string, 0, len(kind.m))
			for name := range kind.m {
				names = append(names, name)
			}
			sort.Strings(names)
			for _, name := range names {
				cDays, cUsers, cKeyIDs, cModels, cCurrencies = append(cDays, k.Day), append(cUsers, k.User), append(cKeyIDs, k.KeyID), append(cModels, k.Model), append(cCurrencies, k.Currency)
				cKinds, cNames, cN = append(cKinds, kind.code), append(cNames, name), append(cN, kind.m[name])
			}
		}
	}
	batch.Queue(`INSERT INTO air_usage AS u (day, user_name, key_id, model, currency, requests, unpriced,
			input, cache_creation, cache_read, output, reasoning, images, video_ms, cost, cache_creation_1h)
		SELECT * FROM unnest($1::date[], $2::text[], $3::text[], $4::text[], $5::text[], $6::bigint[], $7::bigint[],
			$8::bigint[], $9::bigint[], $10::bigint[], $11::bigint[], $12::bigint[], $13::bigint[], $14::bigint[], $15::bigint[], $16::bigint[])
		ON CONFLICT (day, user_name, key_id, model, currency) DO UPDATE SET
			requests = u.requests + EXCLUDED.requests, unpriced = u.unpriced + EXCLUDED.unpriced,
			input = u.input + EXCLUDED.input, cache_creation = u.cache_creation + EXCLUDED.cache_creation,
			cache_read = u.cache_read + EXCLUDED.cache_read, output = u.output + EXCLUDED.output,
			reasoning = u.reasoning + EXCLUDED.reasoning, images = u.images + EXCLUDED.images,
			video_ms = u.video_ms + EXCLUDED.video_ms, cost = u.cost + EXCLUDED.cost,
			cache_creation_1h = u.cache_creation_1h + EXCLUDED.cache_creation_1h`,
		days, users, keyIDs, models, currencies, requests, unpriced, input, cc, cr, output, reasoning, images, vid, c, cc1h)
	if len(cN) > 0 {
		batch.Queue(`INSERT INTO air_usage_counts AS c (day, user_name, key_id, model, currency, kind, name, n)
			SELECT * FROM unnest($1::date[], $2::text[], $3::text[], $4::text[], $5::text[], $6::"char"[], $7::text[], $8::bigint[])
			ON CONFLICT (day, user_name, key_id, model, currency, kind, name) DO UPDATE SET n = c.n + EXCLUDED.n`,
			cDays, cUsers, cKeyIDs, cModels, cCurrencies, cKinds, cNames, cN)
	}
	// Every user's month in each currency, from the aggregates above, in
	// key order.
	type monthKey struct{ month, user, currency string }
	months := map[monthKey]*store.Totals{}
	var mkeys []monthKey
	for _, k := range keys {
		mk := monthKey{k.Day[:len(store.MonthLayout)], k.User, k.Currency}
		if months[mk] == nil {
			months[mk] = &store.Totals{}
			mkeys = append(mkeys, mk)
		}
		months[mk].Merge(aggs[k])
	}
	sort.Slice(mkeys, func(i, j int) bool {
		a, b := mkeys[i], mkeys[j]
		if a.month != b.month {
			return a.month < b.month
		}
		if a.user != b.user {
			return a.user < b.user
		}
		return a.currency < b.currency
	})
	{
		m := len(mkeys)
		mMonths, mUsers, mCur := make([]string, m), make([]string, m), make([]string, m)
		cols := make([][]int64, 11)
		for i := range cols {
			cols[i] = make([]int64, m)
		}
		for i, mk := range mkeys {
			t := months[mk]
			mMonths[i], mUsers[i], mCur[i] = mk.month, mk.user, mk.currency
			for c, v := range [...]int64{t.Requests, t.Unpriced, t.Usage.Input, t.Usage.CacheCreation, t.Usage.CacheCreation1h,
				t.Usage.CacheRead, t.Usage.Output, t.Usage.Reasoning, t.Images, t.VideoMillis, t.Cost} {
				cols[c][i] = v
			}
		}
		batch.Queue(`INSERT INTO air_usage_monthly AS u (month, user_name, currency, requests, unpriced, input, cache_creation,
				cache_creation_1h, cache_read, output, reasoning, images, video_ms, cost)
			SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::bigint[], $6::bigint[], $7::bigint[],
				$8::bigint[], $9::bigint[], $10::bigint[], $11::bigint[], $12::bigint[], $13::bigint[], $14::bigint[])
			ON CONFLICT (month, user_name, currency) DO UPDATE SET
				requests = u.requests + EXCLUDED.requests, unpriced = u.unpriced + EXCLUDED.unpriced,
				input = u.input + EXCLUDED.input, cache_creation = u.cache_creation + EXCLUDED.cache_creation,
				cache_creation_1h = u.cache_creation_1h + EXCLUDED.cache_creation_1h, cache_read = u.cache_read + EXCLUDED.cache_read,
				output = u.output + EXCLUDED.output, reasoning = u.reasoning + EXCLUDED.reasoning, images = u.images + EXCLUDED.images,
				video_ms = u.video_ms + EXCLUDED.video_ms, cost = u.cost + EXCLUDED.cost`,
			mMonths, mUsers, mCur, cols[0], cols[1], cols[2], cols[3], cols[4], cols[5], cols[6], cols[7], cols[8], cols[9], cols[10])
	}
	if len(spend) > 0 {
		counters := make([]store.Spend, 0, len(spend))
		for s := range spend {
			counters = append(counters, s)
		}
		sort.Slice(counters, func(i, j int) bool { return spendLess(counters[i], counters[j]) })
		m := len(counters)
		scopes, subjects, cur, periods, amounts := make([]string, m), make([]string, m), make([]string, m), make([]string, m), make([]int64, m)
		for i, s := range counters {
			scopes[i], subjects[i], cur[i], periods[i], amounts[i] = string(s.Scope), s.ID, s.Currency, s.Period, spend[s]
		}
		batch.Queue(`INSERT INTO air_spend AS s (scope, subject, currency, period, amount)
			SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bigint[])
			ON CONFLICT (scope, subject, currency, period) DO UPDATE SET amount = s.amount + EXCLUDED.amount`,
			scopes, subjects, cur, periods, amounts)
	}
}

func aggLess(a, b store.AggregateKey) bool {
	if a.Day != b.Day {
		return a.Day < b.Day
	}
	if a.User != b.User {
		return a.User < b.User
	}
	if a.KeyID != b.KeyID {
		return a.KeyID < b.KeyID
	}
	if a.Model != b.Model {
		return a.Model < b.Model
	}
	return a.Currency < b.Currency
}

func spendLess(a, b store.Spend) bool {
	if a.Scope != b.Scope {
		return a.Scope < b.Scope
	}
	if a.ID != b.ID {
		return a.ID < b.ID
	}
	if a.Currency != b.Currency {
		return a.Currency < b.Currency
	}
	return a.Period < b.Period
}

// Usage implements store.Ledger.
func (l *Ledger) Usage(ctx context.Context, f store.UsageFilter, fn func(store.Aggregate) error) error {
	var since, until *string
	if f.Since != "" {
		since = &f.Since
	}
	if f.Until != "" {
		until = &f.Until
	}
	rows, err := l.db.pool.Query(ctx, `SELECT to_char(u.day, 'YYYY-MM-DD'), u.user_name, u.key_id, u.model, u.currency,
			requests, unpriced, input, cache_creation, cache_read, output, reasoning, images, video_ms, cost, cache_creation_1h,
			(SELECT coalesce(jsonb_object_agg(name, n), '{}') FROM air_usage_counts c
				WHERE (c.day, c.user_name, c.key_id, c.model, c.currency) = (u.day, u.user_name, u.key_id, u.model, u.currency) AND kind = 's'),
			(SELECT coalesce(jsonb_object_agg(name, n), '{}') FROM air_usage_counts c
				WHERE (c.day, c.user_name, c.key_id, c.model, c.currency) = (u.day, u.user_name, u.key_id, u.model, u.currency) AND kind = 'o')
		FROM air_usage u
		WHERE ($1 = '' OR u.user_name = $1) AND ($2 = '' OR u.key_id = $2) AND ($3 = '' OR u.model = $3)
			AND ($4::date IS NULL OR u.day >= $4::date) AND ($5::date IS NULL OR u.day <= $5::date)
		ORDER BY u.day, u.user_name, u.key_id, u.model, u.currency`, f.User, f.KeyID, f.Model, since, until)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var a store.Aggregate
		t := &a.Totals
		if err := rows.Scan(&a.Day, &a.User, &a.KeyID, &a.Model, &a.Currency, &t.Requests, &t.Unpriced,
			&t.Usage.Input, &t.Usage.CacheCreation, &t.Usage.CacheRead, &t.Usage.Output, &t.Usage.Reasoning,
			&t.Images, &t.VideoMillis, &t.Cost, &t.Usage.CacheCreation1h, &t.Sources, &t.Outcomes); err != nil {
			return err
		}
		if len(t.Sources) == 0 {
			t.Sources = nil
		}
		if len(t.Outcomes) == 0 {
			t.Outcomes = nil
		}
		if err := fn(a); err != nil {
			if errors.Is(err, store.ErrStop) {
				return nil
			}
			return err
		}
	}
	return rows.Err()
}

// MonthTotals implements store.Ledger: the month's rows of
// air_usage_monthly.
func (l *Ledger) MonthTotals(ctx context.Context, month string, fn func(store.UserTotals) error) error {
	rows, err := l.db.pool.Query(ctx, `SELECT user_name, currency, requests, unpriced, input, cache_creation, cache_creation_1h,
			cache_read, output, reasoning, images, video_ms, cost
		FROM air_usage_monthly WHERE month = $1`, month)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var u store.UserTotals
		t := &u.Totals
		if err := rows.Scan(&u.User, &u.Currency, &t.Requests, &t.Unpriced, &t.Usage.Input, &t.Usage.CacheCreation,
			&t.Usage.CacheCreation1h, &t.Usage.CacheRead, &t.Usage.Output, &t.Usage.Reasoning, &t.Images, &t.VideoMillis, &t.Cost); err != nil {
			return err
		}
		if err := fn(u); err != nil {
			if errors.Is(err, store.ErrStop) {
				return nil
			}
			return err
		}
	}
	return rows.Err()
}
