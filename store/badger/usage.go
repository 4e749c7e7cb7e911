package badger

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/caddy-air/caddy-air/store"
)

// maxDayScans bounds the days Usage reads one by one; a longer range is
// read in one scan of every aggregate.
const maxDayScans = 400

// Usage implements store.Ledger. One user's aggregates are found through
// the user's index (au/), from its first day on; otherwise a range of days
// is read day by day, each day's aggregates by their key prefix.
func (l *Ledger) Usage(ctx context.Context, f store.UsageFilter, fn func(store.Aggregate) error) error {
	if f.User != "" {
		return l.userUsage(ctx, f, fn)
	}
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

// userUsage is Usage for one user: a scan of the user's index from the
// first day on, and a read of each selected aggregate.
func (l *Ledger) userUsage(ctx context.Context, f store.UsageFilter, fn func(store.Aggregate) error) error {
	prefix := []byte(prefixUserAggs + esc(f.User) + "/")
	var start []byte
	if f.Since != "" {
		start = append(append([]byte{}, prefix...), f.Since...)
	}
	var keys []store.AggregateKey
	err := l.db.Scan(ctx, prefix, ScanOptions{KeysOnly: true, Start: start}, func(k, _ []byte) error {
		ak, ok := parseUserAggregateKey(k)
		switch {
		case !ok || ak.Day < f.Since:
			return nil
		case f.Until != "" && ak.Day > f.Until:
			return store.ErrStop
		case f.KeyID != "" && ak.KeyID != f.KeyID || f.Model != "" && ak.Model != f.Model:
			return nil
		}
		keys = append(keys, ak)
		return nil
	})
	if err != nil {
		return err
	}
	for _, ak := range keys {
		v, err := l.db.Get(ctx, aggregateKey(ak))
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return err
		}
		t, err := decodeTotals(v)
		if err != nil {
			return fmt.Errorf("decoding aggregate of %s on %s: %w", ak.User, ak.Day, err)
		}
		if err := fn(store.Aggregate{AggregateKey: ak, Totals: t}); err != nil {
			if errors.Is(err, store.ErrStop) {
				return nil
			}
			return err
		}
	}
	return nil
}

// MonthTotals implements store.Ledger: one scan of the month's am/ keys.
func (l *Ledger) MonthTotals(ctx context.Context, month string, fn func(store.UserTotals) error) error {
	prefix := []byte(prefixMonthUsers + month + "/")
	return l.db.Scan(ctx, prefix, ScanOptions{}, func(k, v []byte) error {
		user, cur, ok := strings.Cut(string(k[len(prefix):]), "/")
		if !ok {
			return nil
		}
		t, err := decodeTotals(v)
		if err != nil {
			return fmt.Errorf("decoding %s: %w", k, err)
		}
		return fn(store.UserTotals{User: unesc(user), Currency: unesc(cur), Totals: t})
	})
}

// buildUserIndex gives every aggregate its entry in its user's index, and
// every user its totals of each month, once: stores written before they
// existed get them at their first start. Both are written with Set (the
// totals as summed from the aggregates), so a build cut short by a crash
// is simply done again.
func buildUserIndex(ctx context.Context, db KV, log *zap.Logger) error {
	if _, err := db.Get(ctx, []byte(keyUserAggsBuilt)); err == nil {
		return nil
	} else if !errors.Is(err, store.ErrNotFound) {
		return err
	}
	batch := batchSetter{ctx: ctx, db: db}
	n := 0
	months := map[[3]string]*store.Totals{}
	err := db.Scan(ctx, []byte(prefixAggregates), ScanOptions{}, func(k, v []byte) error {
		ak, ok := parseAggregateKey(k)
		if !ok || len(ak.Day) < len(store.MonthLayout) {
			return nil
		}
		t, err := decodeTotals(v)
		if err != nil {
			return fmt.Errorf("decoding aggregate %s: %w", k, err)
		}
		mk := [3]string{ak.Day[:len(store.MonthLayout)], ak.User, ak.Currency}
		if months[mk] == nil {
			months[mk] = &store.Totals{}
		}
		months[mk].Merge(&t)
		n++
		return batch.set(userAggregateKey(ak), nil)
	})
	if err == nil {
		err = batch.flush()
	}
	for mk, t := range months {
		if err != nil {
			break
		}
		t.Sources, t.Outcomes = nil, nil
		var val []byte
		if val, err = encodeTotals(t); err == nil {
			err = db.Set(ctx, monthUserKey(mk[0], mk[1], mk[2]), val, 0)
		}
	}
	if err != nil {
		return fmt.Errorf("building the usage index by user: %w", err)
	}
	if n > 0 {
		log.Info("built the usage index by user", zap.Int("aggregates", n))
	}
	return db.Set(ctx, []byte(keyUserAggsBuilt), []byte{1}, 0)
}
