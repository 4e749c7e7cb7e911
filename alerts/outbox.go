package alerts

import (
	"context"
	"sort"
	"sync"
	"time"

	"github.com/caddy-air/caddy-air/store"
)

// Delivery states.
const (
	// StatePending is a delivery not yet made.
	StatePending = store.AlertPending
	// StateDelivered is a delivery the webhook accepted.
	StateDelivered = store.AlertDelivered
	// StateFailed is a delivery that failed every attempt.
	StateFailed = store.AlertFailed
	// StateNone marks an event no webhook wanted.
	StateNone = store.AlertNone
)

// Delivery is an event's delivery to one webhook.
type Delivery = store.AlertDelivery

// Outbox holds raised events and their deliveries until they are made
// (store.Alerts: MemoryOutbox here, or a backend's).
type Outbox = store.Alerts

// MemoryOutbox is an Outbox in memory, for tests and for a dispatcher
// without a store: nothing survives a restart (the stores' outboxes,
// store/badger and store/postgres, persist). It keeps at most Keep events;
// older ones are forgotten.
type MemoryOutbox struct {
	// Keep bounds the events kept. Default 1000.
	Keep int
	// Now replaces the clock in tests.
	Now func() time.Time

	mu     sync.Mutex
	seq    int64
	events map[string]*memEvent
}

// memEvent is an event and its deliveries in a MemoryOutbox.
type memEvent struct {
	seq        int64
	deliveries []*memDelivery
}

// memDelivery is a delivery and its lease.
type memDelivery struct {
	Delivery
	owner string
	until time.Time
}

// now is the outbox's clock.
func (o *MemoryOutbox) now() time.Time {
	if o.Now != nil {
		return o.Now()
	}
	return time.Now()
}

// Add implements Outbox.
func (o *MemoryOutbox) Add(_ context.Context, e Event, targets []string) (bool, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.events == nil {
		o.events = map[string]*memEvent{}
	}
	if _, ok := o.events[e.ID]; ok {
		return false, nil
	}
	o.seq++
	me := &memEvent{seq: o.seq}
	for _, t := range targets {
		me.deliveries = append(me.deliveries, &memDelivery{Delivery: Delivery{Event: e, Target: t, State: StatePending}})
	}
	if len(targets) == 0 {
		me.deliveries = []*memDelivery{{Delivery: Delivery{Event: e, State: StateNone}}}
	}
	o.events[e.ID] = me
	o.trim()
	return true, nil
}

// trim forgets the oldest events beyond Keep.
func (o *MemoryOutbox) trim() {
	keep := o.Keep
	if keep <= 0 {
		keep = 1000
	}
	for len(o.events) > keep {
		var oldest string
		var seq int64
		for id, me := range o.events {
			if oldest == "" || me.seq < seq {
				oldest, seq = id, me.seq
			}
		}
		delete(o.events, oldest)
	}
}

// Claim implements Outbox.
func (o *MemoryOutbox) Claim(_ context.Context, owner string, lease time.Duration, n int) ([]Delivery, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	now := o.now()
	var out []Delivery
	for _, me := range o.sorted(false) {
		for _, d := range me.deliveries {
			if len(out) >= n {
				return out, nil
			}
			if d.State != StatePending || d.Target == "" || now.Before(d.until) {
				continue
			}
			d.owner, d.until = owner, now.Add(lease)
			out = append(out, d.Delivery)
		}
	}
	return out, nil
}

// Finish implements Outbox.
func (o *MemoryOutbox) Finish(_ context.Context, owner, id, target, state string, attempts int, lastErr string) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	me, ok := o.events[id]
	if !ok {
		return nil
	}
	for _, d := range me.deliveries {
		if d.Target == target && d.owner == owner && d.State == StatePending {
			at := o.now().UTC()
			d.State, d.Attempts, d.LastError, d.DoneAt = state, d.Attempts+attempts, lastErr, &at
		}
	}
	return nil
}

// Recent implements Outbox.
func (o *MemoryOutbox) Recent(_ context.Context, n int) ([]Delivery, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []Delivery
	for i, me := range o.sorted(true) {
		if i >= n {
			break
		}
		for _, d := range me.deliveries {
			out = append(out, d.Delivery)
		}
	}
	return out, nil
}

// sorted returns the events oldest first, or newest first when desc.
func (o *MemoryOutbox) sorted(desc bool) []*memEvent {
	out := make([]*memEvent, 0, len(o.events))
	for _, me := range o.events {
		out = append(out, me)
	}
	sort.Slice(out, func(i, j int) bool { return (out[i].seq < out[j].seq) != desc })
	return out
}

// Interface guard.
var _ Outbox = (*MemoryOutbox)(nil)
