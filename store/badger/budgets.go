package badger

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/caddy-air/caddy-air/store"
)

// Budgets is the budgets repository on a DB: limits and spend counters in
// the layout of layout.go, and leases as entries that expire with them.
type Budgets struct{ db *DB }

// NewBudgets returns the budgets repository of db.
func NewBudgets(db *DB) *Budgets { return &Budgets{db: db} }

// Limits implements store.Budgets.
func (r *Budgets) Limits(ctx context.Context, fn func(store.Subject, store.Limits) error) error {
	return r.db.Scan(ctx, []byte(prefixLimits), ScanOptions{}, func(k, v []byte) error {
		s, ok := parseSubject(strings.TrimPrefix(string(k), prefixLimits))
		if !ok {
			return nil
		}
		lim, err := decodeLimits(v)
		if err != nil {
			return fmt.Errorf("decoding limits %s: %w", k, err)
		}
		return fn(s, lim)
	})
}

// decodeLimits decodes a limits value.
func decodeLimits(v []byte) (store.Limits, error) {
	var j limitsJSON
	if err := json.Unmarshal(v, &j); err != nil {
		return store.Limits{}, err
	}
	return store.Limits{Currency: j.Currency, Monthly: int64(j.Monthly), Total: int64(j.Total), RPM: j.RPM, TPM: j.TPM, MaxParallel: j.MaxParallel}, nil
}

// SetLimits implements store.Budgets.
func (r *Budgets) SetLimits(ctx context.Context, s store.Subject, l store.Limits) error {
	val, err := json.Marshal(limitsJSON{Currency: l.Currency, Monthly: nanos(l.Monthly), Total: nanos(l.Total), RPM: l.RPM, TPM: l.TPM, MaxParallel: l.MaxParallel})
	if err != nil {
		return err
	}
	return r.db.Set(ctx, limitsKey(s), val, 0)
}

// DeleteLimits implements store.Budgets.
func (r *Budgets) DeleteLimits(ctx context.Context, s store.Subject) error {
	return r.db.Delete(ctx, limitsKey(s))
}

// Spend implements store.Budgets.
func (r *Budgets) Spend(ctx context.Context, fn func(store.Spend) error) error {
	return r.db.Scan(ctx, []byte(prefixSpend), ScanOptions{}, func(k, v []byte) error {
		parts := strings.Split(strings.TrimPrefix(string(k), prefixSpend), "/")
		if len(parts) != 4 {
			return nil
		}
		s, ok := parseSubject(parts[0] + "/" + parts[1])
		if !ok {
			return nil
		}
		n, err := strconv.ParseInt(string(v), 10, 64)
		if err != nil {
			return fmt.Errorf("decoding spend %s: %w", k, err)
		}
		return fn(store.Spend{Subject: s, Currency: unesc(parts[2]), Period: parts[3], Amount: n})
	})
}

// leaseJSON is a lease's value.
type leaseJSON struct {
	Amount  int64 `json:"amount"`
	Expires int64 `json:"expires"` // Unix nanoseconds
}

// leasePrefix is the prefix of the leases of s in currency; a lease's ID
// is its key after prefixLeases.
func leasePrefix(s store.Subject, currency string) string {
	return subjectPart(s) + "/" + esc(currency) + "/"
}

// lockKey is the entry that every lease change of s in currency reads and
// writes, so that Badger's conflict detection serializes them (it does not
// see a lease inserted into a range another transaction iterated).
func lockKey(prefix string) []byte { return []byte("b/v/" + prefix) }

// Reserve implements store.Budgets.
func (r *Budgets) Reserve(ctx context.Context, s store.Subject, currency string, want int64, now time.Time, ttl time.Duration, rates ...store.Rate) (store.Lease, error) {
	prefix := leasePrefix(s, currency)
	var lease store.Lease
	err := r.db.update(ctx, func(txn *badger.Txn) error {
		lease = store.Lease{Subject: s, Currency: currency, Expires: now.Add(ttl)}
		if err := touch(txn, prefix); err != nil {
			return err
		}
		room, limited, err := r.room(txn, s, currency, now, rates)
		if err != nil {
			return err
		}
		lease.Amount = max(want, 0)
		if limited {
			lease.Amount = max(min(lease.Amount, room), 0)
		}
		if lease.Amount == 0 {
			return nil
		}
		b := make([]byte, 12)
		_, _ = rand.Read(b)
		lease.ID = prefix + hex.EncodeToString(b)
		return putLease(txn, lease.ID, lease.Amount, lease.Expires)
	})
	return lease, err
}

// touch reads and rewrites the lock entry of prefix.
func touch(txn *badger.Txn, prefix string) error {
	var n uint64
	item, err := txn.Get(lockKey(prefix))
	switch {
	case err == nil:
		_ = item.Value(func(v []byte) error {
			n, _ = strconv.ParseUint(string(v), 10, 64)
			return nil
		})
	case !errors.Is(err, badger.ErrKeyNotFound):
		return err
	}
	return txn.Set(lockKey(prefix), strconv.AppendUint(nil, n+1, 10))
}

// putLease stores a lease that expires at expires.
func putLease(txn *badger.Txn, id string, amount int64, expires time.Time) error {
	val, _ := json.Marshal(leaseJSON{Amount: amount, Expires: expires.UnixNano()})
	return setEntry(txn, []byte(prefixLeases+id), val, ttlUntil(expires))
}

// room returns how much of s's budget in currency is left at now (spend
// limits minus spend, in currency and converted by rates, minus unexpired
// leases, saturating: a spend at the largest int64 leaves no room) and
// whether any spend limit applies.
func (r *Budgets) room(txn *badger.Txn, s store.Subject, currency string, now time.Time, rates []store.Rate) (int64, bool, error) {
	item, err := txn.Get(limitsKey(s))
	if errors.Is(err, badger.ErrKeyNotFound) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	v, err := item.ValueCopy(nil)
	if err != nil {
		return 0, false, err
	}
	lim, err := decodeLimits(v)
	if err != nil {
		return 0, false, err
	}
	if lim.Currency != "" && lim.Currency != currency || lim.Monthly <= 0 && lim.Total <= 0 {
		return 0, false, nil
	}
	reserved, err := sumLeases(txn, leasePrefix(s, currency), now)
	if err != nil {
		return 0, false, err
	}
	room := int64(1<<63 - 1)
	for _, p := range []struct {
		limit  int64
		period string
	}{{lim.Monthly, store.MonthOf(now)}, {lim.Total, store.PeriodTotal}} {
		if p.limit <= 0 {
			continue
		}
		spent, err := readCounter(txn, spendKey(s, currency, p.period))
		if err != nil {
			return 0, false, err
		}
		for _, rt := range rates {
			other, err := readCounter(txn, spendKey(s, rt.Currency, p.period))
			if err != nil {
				return 0, false, err
			}
			conv, ok := rt.Convert(other)
			if !ok {
				return 0, false, fmt.Errorf("malformed rate %+v", rt)
			}
			spent = store.AddSat(spent, conv)
		}
		room = min(room, store.SubSat(p.limit, store.AddSat(spent, reserved)))
	}
	return room, true, nil
}

// readCounter reads a spend counter (zero if missing).
func readCounter(txn *badger.Txn, key []byte) (int64, error) {
	item, err := txn.Get(key)
	if errors.Is(err, badger.ErrKeyNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	var n int64
	err = item.Value(func(v []byte) error {
		var err error
		n, err = strconv.ParseInt(string(v), 10, 64)
		return err
	})
	return n, err
}

// sumLeases sums the leases under prefix that are unexpired at now,
// saturating at the largest int64.
func sumLeases(txn *badger.Txn, prefix string, now time.Time) (int64, error) {
	opts := badger.DefaultIteratorOptions
	opts.Prefix = []byte(prefixLeases + prefix)
	it := txn.NewIterator(opts)
	defer it.Close()
	var sum int64
	for it.Rewind(); it.Valid(); it.Next() {
		var l leaseJSON
		if err := it.Item().Value(func(v []byte) error { return json.Unmarshal(v, &l) }); err != nil {
			return 0, err
		}
		if time.Unix(0, l.Expires).After(now) {
			sum = store.AddSat(sum, l.Amount)
		}
	}
	return sum, nil
}

// leaseLock is the lock prefix of lease id.
func leaseLock(id string) string {
	if i := strings.LastIndexByte(id, '/'); i >= 0 {
		return id[:i+1]
	}
	return id
}

// Extend implements store.Budgets.
func (r *Budgets) Extend(ctx context.Context, id string, until time.Time) error {
	return r.db.update(ctx, func(txn *badger.Txn) error {
		item, err := txn.Get([]byte(prefixLeases + id))
		if err != nil {
			return mapErr(err)
		}
		var l leaseJSON
		if err := item.Value(func(v []byte) error { return json.Unmarshal(v, &l) }); err != nil {
			return err
		}
		if !time.Unix(0, l.Expires).After(time.Now()) {
			return store.ErrNotFound
		}
		if err := touch(txn, leaseLock(id)); err != nil {
			return err
		}
		return putLease(txn, id, l.Amount, until)
	})
}

// Shrink implements store.Budgets.
func (r *Budgets) Shrink(ctx context.Context, id string, amount int64) error {
	return r.db.update(ctx, func(txn *badger.Txn) error {
		item, err := txn.Get([]byte(prefixLeases + id))
		if errors.Is(err, badger.ErrKeyNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		var l leaseJSON
		if err := item.Value(func(v []byte) error { return json.Unmarshal(v, &l) }); err != nil {
			return err
		}
		amount = max(amount, 0)
		if l.Amount <= amount {
			return nil
		}
		if err := touch(txn, leaseLock(id)); err != nil {
			return err
		}
		return putLease(txn, id, amount, time.Unix(0, l.Expires))
	})
}

// Release implements store.Budgets.
func (r *Budgets) Release(ctx context.Context, id string) error {
	if id == "" {
		return nil
	}
	return r.db.update(ctx, func(txn *badger.Txn) error {
		if err := touch(txn, leaseLock(id)); err != nil {
			return err
		}
		return txn.Delete([]byte(prefixLeases + id))
	})
}

// Reserved implements store.Budgets.
func (r *Budgets) Reserved(_ context.Context, s store.Subject, currency string, now time.Time) (int64, error) {
	var sum int64
	err := r.db.db.View(func(txn *badger.Txn) error {
		var err error
		sum, err = sumLeases(txn, leasePrefix(s, currency), now)
		return err
	})
	return sum, err
}

// Interface guard.
var _ store.Budgets = (*Budgets)(nil)
