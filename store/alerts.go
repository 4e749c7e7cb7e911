package store

import (
	"context"
	"time"
)

// AlertEvent is a raised alert (alerts.Event's storage and wire shape: it
// is the JSON body that webhooks receive).
type AlertEvent struct {
	// ID is the event's dedupe id: the same occurrence raised twice has
	// the same ID and is stored, and delivered, once.
	ID string `json:"id"`
	// Kind names what happened (budget, breaker_open, …).
	Kind string `json:"kind"`
	// At is when the event was raised.
	At time.Time `json:"at"`
	// Message is a one-line human description.
	Message string `json:"message"`
	// Data are the event's details; never a secret.
	Data map[string]string `json:"data,omitempty"`
}

// Alert delivery states.
const (
	// AlertPending is a delivery not yet made (or whose lease ran out).
	AlertPending = "pending"
	// AlertDelivered is a delivery the webhook accepted.
	AlertDelivered = "delivered"
	// AlertFailed is a delivery that failed every attempt.
	AlertFailed = "failed"
	// AlertNone marks an event that no webhook wanted: it is kept for
	// the console only.
	AlertNone = "none"
)

// AlertDelivery is an event's delivery to one webhook.
type AlertDelivery struct {
	// Event is the event delivered.
	Event AlertEvent `json:"event"`
	// Target is the webhook's name; "" with State AlertNone.
	Target string `json:"target,omitempty"`
	// State is one of the Alert* states.
	State string `json:"state"`
	// Attempts counts the attempts made so far.
	Attempts int `json:"attempts"`
	// LastError is the last attempt's error, if it failed.
	LastError string `json:"last_error,omitempty"`
	// DoneAt is when the delivery ended (delivered or failed).
	DoneAt *time.Time `json:"done_at,omitempty"`
}

// Alerts is the outbox of raised alerts. A shared backend gives each
// delivery to one instance at a time by a lease, so that each event is
// delivered once across instances; an instance that dies holding a lease
// lets another take the delivery when the lease runs out.
type Alerts interface {
	// Add stores e with a pending delivery to each of targets (with none,
	// one AlertNone entry). An event whose ID is stored already changes
	// nothing and reports false.
	Add(ctx context.Context, e AlertEvent, targets []string) (bool, error)
	// Claim leases up to n pending deliveries, oldest first, whose lease
	// is free or ran out, to owner until now+lease.
	Claim(ctx context.Context, owner string, lease time.Duration, n int) ([]AlertDelivery, error)
	// Finish records how owner's leased delivery of event id to target
	// ended (AlertDelivered or AlertFailed, after attempts more). A
	// delivery no longer leased to owner is left alone.
	Finish(ctx context.Context, owner, id, target, state string, attempts int, lastErr string) error
	// Recent returns the deliveries of the n newest events, newest first.
	Recent(ctx context.Context, n int) ([]AlertDelivery, error)
}
