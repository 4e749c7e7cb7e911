package badger

import (
	"context"
	"time"
)

// KV is the key-value view of the DB that the repositories of this
// package are written on (before the repository seam, every domain
// package persisted through it). Tests wrap it to inject failures.

// Txn is the view of the store inside an atomic Update. Reads see the
// transaction's own writes. Values returned by Get are only valid until the
// transaction ends; copy them to keep them.
type Txn interface {
	// Get returns the value stored under key, or store.ErrNotFound.
	Get(key []byte) ([]byte, error)
	// Set stores value under key. A ttl of zero means no expiry.
	Set(key, value []byte, ttl time.Duration) error
	// Delete removes key. Deleting a missing key is not an error.
	Delete(key []byte) error
}

// ScanOptions tunes a prefix scan.
type ScanOptions struct {
	// Reverse walks the keys in descending order.
	Reverse bool
	// KeysOnly skips reading values; the callback gets a nil value.
	KeysOnly bool
	// Start, if it sorts after the prefix, is where a scan begins: keys
	// before it (after it, in reverse) are skipped without being read.
	Start []byte
}

// KV is a durable, ordered key-value store with TTLs.
type KV interface {
	// Get returns a copy of the value stored under key, or store.ErrNotFound.
	Get(ctx context.Context, key []byte) ([]byte, error)
	// Set stores value under key. A ttl of zero means no expiry.
	Set(ctx context.Context, key, value []byte, ttl time.Duration) error
	// Delete removes key. Deleting a missing key is not an error.
	Delete(ctx context.Context, key []byte) error
	// Update runs fn in one serializable read-write transaction and commits
	// it if fn returns nil. Implementations retry fn on write conflicts, so
	// fn must not have side effects outside the transaction.
	Update(ctx context.Context, fn func(Txn) error) error
	// Scan calls fn for every live key that starts with prefix, in key
	// order. key and value are only valid during the call. Returning store.ErrStop
	// from fn ends the scan and Scan returns nil; any other error ends the
	// scan and is returned.
	Scan(ctx context.Context, prefix []byte, opts ScanOptions, fn func(key, value []byte) error) error
	// Close releases the store's resources.
	Close() error
}
