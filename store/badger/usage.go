package badger

import (
	"context"
	"fmt"
	"time"

	"github.com/caddy-air/caddy-air/store"
)

// maxDayScans bounds the days Usage reads one by one; a longer range is
// read in one scan of every aggregate.
const maxDayScans = 400

// Usage implements store.Ledger. A range of days is read day by day, each
// day's aggregates by their key prefix.
func (l *Ledger) Usage(ctx context.Context, f store.UsageFilter, fn func(store.Aggregate) error) error {
	stopped := false
	visit := func(k, v []byte) error {
		ak, ok := parseAggregateKey(k)
		if !ok || ak.Day < f.Since {
			return nil
		}
		if f.Until != "" && ak.Day > f.Until {
			stopped = true
			return store.ErrStop
		}
		if f.User != "" && ak.User != f.User || f.KeyID != "" && ak.KeyID != f.KeyID || f.Model != "" && ak.Model != f.Model {
			return nil
		}
		t, err := decodeTotals(v)
		if err != nil {
			return fmt.Errorf("decoding aggregate %s: %w", k, err)
		}
		err = fn(store.Aggregate{AggregateKey: ak, Totals: t})
		if err == store.ErrStop {
			stopped = true
		}
		return err
	}
	first, err1 := time.Parse(store.DayLayout, f.Since)
	last, err2 := time.Parse(store.DayLayout, f.Until)
	if f.Until == "" {
		last, err2 = time.Now().UTC().Truncate(24*time.Hour), nil
	}
	if f.Since == "" || err1 != nil || err2 != nil || last.Sub(first) > maxDayScans*24*time.Hour {
		return l.db.Scan(ctx, []byte(prefixAggregates), ScanOptions{}, visit)
	}
	for d := first; !d.After(last) && !stopped; d = d.AddDate(0, 0, 1) {
		prefix := []byte(prefixAggregates + d.Format(store.DayLayout) + "/")
		if err := l.db.Scan(ctx, prefix, ScanOptions{}, visit); err != nil {
			return err
		}
	}
	return nil
}
