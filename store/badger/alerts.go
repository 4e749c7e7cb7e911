package badger

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/caddy-air/caddy-air/store"
)

// Key layout of the alerts outbox (all with the retention TTL):
//
//	al/i/<id>             the key of the event's entry under al/e/
//	al/e/<unix nanos>/<id> the event and its deliveries (JSON)
//	al/p/<unix nanos>/<id> empty: the event has a pending delivery
const (
	prefixAlertIDs     = "al/i/"
	prefixAlertEvents  = "al/e/"
	prefixAlertPending = "al/p/"
)

// alertRetention is how long raised alerts are kept, for the console and
// for dedupe: an event raised again within it is not delivered again.
const alertRetention = 90 * 24 * time.Hour

// Alerts is store.Alerts on a KV. One Badger store serves one instance,
// so its delivery leases are kept in memory.
type Alerts struct {
	kv KV

	mu     sync.Mutex
	leases map[string]alertLease // by event id + "\x00" + target
}

// alertLease is who holds a delivery, until when.
type alertLease struct {
	owner string
	until time.Time
}

// alertEntry is an event's stored value.
type alertEntry struct {
	Event      store.AlertEvent      `json:"event"`
	Deliveries []store.AlertDelivery `json:"deliveries"`
}

// NewAlerts returns the alerts outbox stored in kv.
func NewAlerts(kv KV) *Alerts { return &Alerts{kv: kv, leases: map[string]alertLease{}} }

// alertSuffix is an event's key after its prefix: time, then id.
func alertSuffix(e store.AlertEvent) string {
	return fmt.Sprintf("%020d/%s", e.At.UnixNano(), esc(e.ID))
}

// Add implements store.Alerts.
func (a *Alerts) Add(ctx context.Context, e store.AlertEvent, targets []string) (bool, error) {
	added := false
	err := a.kv.Update(ctx, func(txn Txn) error {
		added = false
		if _, err := txn.Get([]byte(prefixAlertIDs + esc(e.ID))); err == nil {
			return nil
		} else if !errors.Is(err, store.ErrNotFound) {
			return err
		}
		ent := alertEntry{Event: e}
		for _, t := range targets {
			ent.Deliveries = append(ent.Deliveries, store.AlertDelivery{Target: t, State: store.AlertPending})
		}
		if len(targets) == 0 {
			ent.Deliveries = []store.AlertDelivery{{State: store.AlertNone}}
		}
		v, err := json.Marshal(ent)
		if err != nil {
			return err
		}
		suffix := alertSuffix(e)
		if err := txn.Set([]byte(prefixAlertIDs+esc(e.ID)), []byte(suffix), alertRetention); err != nil {
			return err
		}
		if err := txn.Set([]byte(prefixAlertEvents+suffix), v, alertRetention); err != nil {
			return err
		}
		if len(targets) > 0 {
			if err := txn.Set([]byte(prefixAlertPending+suffix), nil, alertRetention); err != nil {
				return err
			}
		}
		added = true
		return nil
	})
	return added, err
}

// Claim implements store.Alerts.
func (a *Alerts) Claim(ctx context.Context, owner string, lease time.Duration, n int) ([]store.AlertDelivery, error) {
	var suffixes []string
	err := a.kv.Scan(ctx, []byte(prefixAlertPending), ScanOptions{KeysOnly: true}, func(k, _ []byte) error {
		suffixes = append(suffixes, string(k[len(prefixAlertPending):]))
		return nil
	})
	if err != nil {
		return nil, err
	}
	now := time.Now()
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []store.AlertDelivery
	for _, s := range suffixes {
		ent, err := a.entry(ctx, s)
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return out, err
		}
		for _, d := range ent.Deliveries {
			lk := ent.Event.ID + "\x00" + d.Target
			if d.State != store.AlertPending || now.Before(a.leases[lk].until) {
				continue
			}
			if len(out) >= n {
				return out, nil
			}
			a.leases[lk] = alertLease{owner: owner, until: now.Add(lease)}
			d.Event = ent.Event
			out = append(out, d)
		}
	}
	return out, nil
}

// entry reads the event stored under suffix.
func (a *Alerts) entry(ctx context.Context, suffix string) (alertEntry, error) {
	var ent alertEntry
	v, err := a.kv.Get(ctx, []byte(prefixAlertEvents+suffix))
	if err != nil {
		return ent, err
	}
	return ent, json.Unmarshal(v, &ent)
}

// Finish implements store.Alerts.
func (a *Alerts) Finish(ctx context.Context, owner, id, target, state string, attempts int, lastErr string) error {
	lk := id + "\x00" + target
	a.mu.Lock()
	l := a.leases[lk]
	if l.owner != owner {
		a.mu.Unlock()
		return nil
	}
	delete(a.leases, lk)
	a.mu.Unlock()
	at := time.Now().UTC()
	return a.kv.Update(ctx, func(txn Txn) error {
		suffix, err := txn.Get([]byte(prefixAlertIDs + esc(id)))
		if errors.Is(err, store.ErrNotFound) {
			return nil
		} else if err != nil {
			return err
		}
		v, err := txn.Get([]byte(prefixAlertEvents + string(suffix)))
		if err != nil {
			return err
		}
		var ent alertEntry
		if err := json.Unmarshal(v, &ent); err != nil {
			return err
		}
		pending := false
		for i := range ent.Deliveries {
			d := &ent.Deliveries[i]
			if d.Target == target && d.State == store.AlertPending {
				d.State, d.Attempts, d.LastError, d.DoneAt = state, d.Attempts+attempts, lastErr, &at
			}
			pending = pending || d.State == store.AlertPending
		}
		if v, err = json.Marshal(ent); err != nil {
			return err
		}
		if err := txn.Set([]byte(prefixAlertEvents+string(suffix)), v, alertRetention); err != nil {
			return err
		}
		if !pending {
			return txn.Delete([]byte(prefixAlertPending + string(suffix)))
		}
		return nil
	})
}

// Recent implements store.Alerts.
func (a *Alerts) Recent(ctx context.Context, n int) ([]store.AlertDelivery, error) {
	var out []store.AlertDelivery
	seen := 0
	err := a.kv.Scan(ctx, []byte(prefixAlertEvents), ScanOptions{Reverse: true}, func(_, v []byte) error {
		if seen >= n {
			return store.ErrStop
		}
		seen++
		var ent alertEntry
		if err := json.Unmarshal(v, &ent); err != nil {
			return err
		}
		for _, d := range ent.Deliveries {
			d.Event = ent.Event
			out = append(out, d)
		}
		return nil
	})
	return out, err
}

// Interface guard.
var _ store.Alerts = (*Alerts)(nil)
