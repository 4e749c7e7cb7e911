package badger

import (
	"context"
	"encoding/binary"
	"errors"
	"time"

	"github.com/caddy-air/caddy-air/store"
)

// Key layout of the response-id mappings:
//
//	rs/<escaped id>  the mapping (TTL: the one it was put with)
//	rp/<escaped id>  while the id is pending: its Due and its expiry (Unix
//	                 nanoseconds, 8 bytes each), with the mapping's TTL
const (
	prefixResponses = "rs/"
	prefixPending   = "rp/"
)

// Responses is store.Responses on a KV. Its leases hold between the
// goroutines of one process (a claim is a serializable read-write
// transaction); one Badger store serves one instance.
type Responses struct{ kv KV }

// NewResponses returns the response-id mappings stored in kv.
func NewResponses(kv KV) *Responses { return &Responses{kv: kv} }

func responseKey(id string) []byte { return []byte(prefixResponses + esc(id)) }
func pendingKey(id string) []byte  { return []byte(prefixPending + esc(id)) }

// pendingValue encodes a pending entry.
func pendingValue(due, expires time.Time) []byte {
	v := binary.BigEndian.AppendUint64(nil, uint64(due.UnixNano()))
	return binary.BigEndian.AppendUint64(v, uint64(expires.UnixNano()))
}

// parsePending decodes a pending entry; ok is false for a malformed one.
func parsePending(v []byte) (due, expires time.Time, ok bool) {
	if len(v) != 16 {
		return due, expires, false
	}
	return time.Unix(0, int64(binary.BigEndian.Uint64(v))), time.Unix(0, int64(binary.BigEndian.Uint64(v[8:]))), true
}

// Put implements store.Responses.
func (r *Responses) Put(ctx context.Context, id string, value []byte, ttl time.Duration) error {
	return r.kv.Update(ctx, func(txn Txn) error {
		if err := txn.Set(responseKey(id), value, ttl); err != nil {
			return err
		}
		return txn.Delete(pendingKey(id))
	})
}

// PutPending implements store.Responses.
func (r *Responses) PutPending(ctx context.Context, id string, value []byte, ttl time.Duration, due time.Time) error {
	expires := time.Now().Add(ttl)
	return r.kv.Update(ctx, func(txn Txn) error {
		if err := txn.Set(responseKey(id), value, ttl); err != nil {
			return err
		}
		return txn.Set(pendingKey(id), pendingValue(due, expires), ttl)
	})
}

// Get implements store.Responses.
func (r *Responses) Get(ctx context.Context, id string) ([]byte, error) {
	return r.kv.Get(ctx, responseKey(id))
}

// ClaimDue implements store.Responses: it reads the pending index and
// claims each due id in a transaction of its own, which conflicts with
// any other claim, Put or Reschedule of the id.
func (r *Responses) ClaimDue(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]store.PendingResponse, error) {
	if limit <= 0 {
		return nil, nil
	}
	// Candidates beyond a few times limit are left for the next call: a
	// claim that loses a race only costs a candidate.
	candidates := max(4*limit, 64)
	var due []string
	err := r.kv.Scan(ctx, []byte(prefixPending), ScanOptions{}, func(k, v []byte) error {
		d, exp, ok := parsePending(v)
		if !ok || d.After(now) || !exp.After(now) {
			return nil
		}
		due = append(due, unesc(string(k[len(prefixPending):])))
		if len(due) >= candidates {
			return store.ErrStop
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	var out []store.PendingResponse
	for _, id := range due {
		if len(out) >= limit {
			break
		}
		var p store.PendingResponse
		claimed := false
		err := r.kv.Update(ctx, func(txn Txn) error {
			claimed = false
			d, exp, ok, err := getPending(txn, id)
			if err != nil || !ok || d.After(now) || !exp.After(now) {
				return err
			}
			v, err := txn.Get(responseKey(id))
			if errors.Is(err, store.ErrNotFound) {
				return txn.Delete(pendingKey(id))
			}
			if err != nil {
				return err
			}
			p = store.PendingResponse{ID: id, Value: append([]byte(nil), v...), Due: now.Add(lease)}
			claimed = true
			return txn.Set(pendingKey(id), pendingValue(p.Due, exp), ttlUntil(exp))
		})
		if err != nil {
			return out, err
		}
		if claimed {
			out = append(out, p)
		}
	}
	return out, nil
}

// getPending reads id's pending entry in txn; ok is false when there is
// none.
func getPending(txn Txn, id string) (due, expires time.Time, ok bool, err error) {
	v, err := txn.Get(pendingKey(id))
	if errors.Is(err, store.ErrNotFound) {
		return due, expires, false, nil
	}
	if err != nil {
		return due, expires, false, err
	}
	due, expires, ok = parsePending(v)
	return due, expires, ok, nil
}

// Reschedule implements store.Responses.
func (r *Responses) Reschedule(ctx context.Context, id string, due time.Time) (bool, error) {
	var done bool
	err := r.kv.Update(ctx, func(txn Txn) error {
		done = false
		_, exp, ok, err := getPending(txn, id)
		if err != nil || !ok || !exp.After(time.Now()) {
			return err
		}
		done = true
		return txn.Set(pendingKey(id), pendingValue(due, exp), ttlUntil(exp))
	})
	return done, err
}

// Interface guard.
var _ store.Responses = (*Responses)(nil)
