package postgres

import (
	"context"
	"errors"

	"github.com/caddy-air/caddy-air/store"
)

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
			audio_input, audio_output, image_input, image_output, web_searches, web_fetches, file_searches, code_sessions, image_calls, unpriced_charges,
			characters, audio_ms, search_units,
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
			&t.Images, &t.VideoMillis, &t.Cost, &t.Usage.CacheCreation1h,
			&t.Usage.AudioInput, &t.Usage.AudioOutput, &t.Usage.ImageInput, &t.Usage.ImageOutput, &t.Usage.WebSearches,
			&t.Usage.WebFetches, &t.Usage.FileSearches, &t.Usage.CodeSessions, &t.Usage.ImageCalls, &t.UnpricedCharges,
			&t.Usage.Characters, &t.Usage.AudioMillis, &t.Usage.SearchUnits, &t.Sources, &t.Outcomes); err != nil {
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
			cache_read, output, reasoning, images, video_ms, cost, audio_input, audio_output, image_input, image_output, web_searches, web_fetches, file_searches, code_sessions, image_calls, unpriced_charges,
			characters, audio_ms, search_units
		FROM air_usage_monthly WHERE month = $1`, month)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var u store.UserTotals
		t := &u.Totals
		if err := rows.Scan(&u.User, &u.Currency, &t.Requests, &t.Unpriced, &t.Usage.Input, &t.Usage.CacheCreation,
			&t.Usage.CacheCreation1h, &t.Usage.CacheRead, &t.Usage.Output, &t.Usage.Reasoning, &t.Images, &t.VideoMillis, &t.Cost,
			&t.Usage.AudioInput, &t.Usage.AudioOutput, &t.Usage.ImageInput, &t.Usage.ImageOutput, &t.Usage.WebSearches,
			&t.Usage.WebFetches, &t.Usage.FileSearches, &t.Usage.CodeSessions, &t.Usage.ImageCalls, &t.UnpricedCharges,
			&t.Usage.Characters, &t.Usage.AudioMillis, &t.Usage.SearchUnits); err != nil {
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
