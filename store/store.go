// Package store is caddy-air's storage seam: one repository interface per
// concern (keys, the ledger and its aggregates, budgets and spend, rate
// limits, tasks with leases, media, response-id mappings), the plain
// data types they exchange, and the contract that every backend must
// keep (package store/storetest checks it).
//
// The seam sits at the domain level, not at a key-value level: budget
// reservations, task leases and idempotent ledger inserts want a
// backend's own guarantees (a database's transactions and row locks), not
// transactions emulated over keys. Domain packages (billing, keys, tasks)
// import this package only, never a backend. Backends: store/badger
// (embedded, one instance) and store/postgres (shared by
// several instances).
//
// Types here are storage shapes: amounts are int64 nano units of their
// currency, ids and names plain strings. The domain packages convert them
// to and from their own types.
package store

import (
	"context"
	"errors"
	"io"
)

// ErrNotFound is returned when a record does not exist or has expired.
var ErrNotFound = errors.New("store: not found")

// ErrExists is returned by inserts whose id is already taken.
var ErrExists = errors.New("store: already exists")

// ErrStorageFull is returned, wrapped with the figures, by a write that
// the backend refused because its disk has too little free space left:
// nothing was written. It clears by itself once space is freed.
var ErrStorageFull = errors.New("storage full")

// ErrStop may be returned by a callback given to a method that walks
// records, to end the walk early; the method then returns nil.
var ErrStop = errors.New("store: stop scan")

// Repos is one backend's set of repositories. A backend's Open returns it;
// the gateway holds it for as long as a config uses the backend.
type Repos struct {
	// Keys keeps API keys.
	Keys Keys
	// Ledger keeps settled records and their aggregates.
	Ledger Ledger
	// Intents keeps the intents of requests in flight.
	Intents Intents
	// Budgets keeps limits, spend and budget leases.
	Budgets Budgets
	// Teams keeps teams and their members.
	Teams Teams
	// RateLimits counts requests and tokens per window.
	RateLimits RateLimits
	// Tasks keeps image and video tasks and their leases.
	Tasks Tasks
	// Files keeps the records of the files users upload (/v1/files), in
	// the shape of tasks: a file is never Working. Their content is in
	// Media.
	Files Tasks
	// Batches keeps batches (/v1/batches) and their leases, in the shape
	// of tasks: a batch is Working until it is billed.
	Batches Tasks
	// Media keeps re-hosted files.
	Media MediaStore
	// Responses maps response ids to where they live; nil when the backend
	// has none (the Responses API's retrieval then answers 404).
	Responses Responses
	// Audit keeps the audit trail of changes made by operators and users.
	Audit Audit
	// Alerts is the outbox of raised alerts.
	Alerts Alerts
	// RequestLogs keeps the bodies of requests whose key or team has
	// request logging on; nil when the backend has none.
	RequestLogs RequestLogs
	// Probe tests that the backend takes writes, for the health check;
	// nil when the backend has no probe.
	Probe Prober
	// Reserve returns the free space, in bytes, that the backend keeps on
	// its disk for its own writes: below it, its writes fail with
	// ErrStorageFull. Nil when the backend keeps none.
	Reserve func() int64
	// Closer releases the backend once the repositories are no longer used;
	// it closes the ledger (counting what it has not counted yet) and then
	// the database. Drain billing.Ledger before.
	Closer io.Closer
}

// Prober tests that a backend takes writes.
type Prober interface {
	// Probe writes a small value that expires on its own, and returns the
	// error that kept it from being written.
	Probe(ctx context.Context) error
}

// Close closes the backend through r.Closer, if any.
func (r Repos) Close() error {
	if r.Closer == nil {
		return nil
	}
	return r.Closer.Close()
}
