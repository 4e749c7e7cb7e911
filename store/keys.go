package store

import (
	"context"
	"time"
)

// Key is a stored API key (keys.Key's storage shape). The secret itself is
// never stored, only its hash.
type Key struct {
	// ID is the key's public id.
	ID string
	// Hash is the hex SHA-256 of the secret; lookups go by it.
	Hash string
	// User owns the key.
	User string
	// Name is a free-form label.
	Name string
	// CreatedAt is when the key was created.
	CreatedAt time.Time
	// ExpiresAt, if set, is when the key stops working.
	ExpiresAt *time.Time
	// RevokedAt, if set, is when the key was revoked.
	RevokedAt *time.Time
	// Models, if not empty, are the model ids or globs (path.Match syntax)
	// the key may use; empty means every model.
	Models []string
	// Tags are the key's default tags, put on the records of its requests
	// that carry none.
	Tags []string
	// LastUsedAt, if set, is when the key last authenticated a request, as
	// last written by Touch (coalesced: it may lag by a minute).
	LastUsedAt *time.Time
	// PrevHash, if set, is the hash of the key's secret before its last
	// Regenerate; ByHash finds the key by it too. It authenticates until
	// PrevUntil.
	PrevHash string
	// PrevUntil is when the previous secret stops working.
	PrevUntil *time.Time
	// AllowIPs, if not empty, are the CIDRs from which the key may be used.
	AllowIPs []string
	// LogRequests keeps the bodies of the key's requests (request logs).
	LogRequests bool
}

// KeyChange is what Keys.Update sets of a key; each field replaces the
// key's.
type KeyChange struct {
	// Name is the key's label.
	Name string
	// Models are the model ids or globs the key may use; empty: every
	// model.
	Models []string
	// ExpiresAt is when the key stops working; nil: never.
	ExpiresAt *time.Time
	// AllowIPs are the CIDRs from which the key may be used; empty: any.
	AllowIPs []string
	// LogRequests keeps the bodies of the key's requests.
	LogRequests bool
}

// Keys keeps API keys.
//
// A key created through any instance is found by ByHash on every instance
// at once (the create has committed when Create returns). Revocations are
// broadcast: an instance that caches keys drops a revoked one when
// Revocations reports it, so that no per-request read is needed for a
// valid key; a shared backend delivers the report to every instance
// within one second.
type Keys interface {
	// Create stores k. A key whose ID or Hash is taken is ErrExists and
	// nothing is stored.
	Create(ctx context.Context, k Key) error
	// ByHash returns the key whose secret hashes to hash, revoked and
	// expired keys included, or ErrNotFound. A key is found by its
	// PrevHash too (whether its PrevUntil has passed is the caller's to
	// judge).
	ByHash(ctx context.Context, hash string) (Key, error)
	// List returns the keys of user (every key when user is ""), oldest
	// first.
	List(ctx context.Context, user string) ([]Key, error)
	// Revoke marks key id revoked at at and returns it; revoking a revoked
	// key keeps the first time and changes nothing. An unknown id is
	// ErrNotFound.
	Revoke(ctx context.Context, id string, at time.Time) (Key, error)
	// Regenerate gives key id the secret whose hash is hash: its current
	// hash becomes its PrevHash, valid until prevUntil (a time past ends
	// it at once), and a PrevHash it had is forgotten. Every
	// instance's cache drops the key (Revocations reports its former
	// hashes). An unknown id is ErrNotFound; a hash taken is ErrExists.
	Regenerate(ctx context.Context, id, hash string, prevUntil time.Time) (Key, error)
	// Update replaces key id's name, models, expiry and allowed IPs with ch's and
	// returns the key. Every instance's cache drops the key:
	// Revocations reports its hash, as for a revocation, so that the
	// change applies to the next request everywhere. An unknown id is
	// ErrNotFound.
	Update(ctx context.Context, id string, ch KeyChange) (Key, error)
	// Touch records when keys were last used: for each id in used, the
	// key's LastUsedAt becomes the later of its value and the given time.
	// Unknown ids are skipped. All of used is written in one batch.
	Touch(ctx context.Context, used map[string]time.Time) error
	// Revocations calls fn with the hash of every key revoked, updated or
	// regenerated (through any instance) after the call, and with the
	// hashes it had before, until ctx ends. fn must not block.
	Revocations(ctx context.Context, fn func(hash string))
}
