package keys

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/caddy-air/caddy-air/store"
)

// Service creates, lists, revokes and authenticates keys. It caches active
// keys in memory and drops a key from the cache when the repository
// reports its revocation (store.Keys.Revocations), so that a revocation
// through any instance takes effect on the next request.
type Service struct {
	store store.Keys
	now   func() time.Time

	mu     sync.RWMutex
	cache  map[string]*Key      // by hash
	misses map[string]time.Time // hashes the store did not know, and until when that is trusted
}

// Unknown secrets are remembered for missTTL, at most maxMisses of them, so
// that a client repeating a deleted or mistyped key costs no store read per
// request (on PostgreSQL, a query). A secret is random: one that missed
// cannot belong to a key created meanwhile, except by a guess of 2^190.
const (
	missTTL   = 10 * time.Second
	maxMisses = 4096
)

// NewService returns a Service over r. It watches r's revocations until
// ctx ends.
func NewService(ctx context.Context, r store.Keys) *Service {
	s := &Service{store: r, now: time.Now, cache: make(map[string]*Key), misses: make(map[string]time.Time)}
	r.Revocations(ctx, s.forget)
	return s
}

// forget drops the key with hash h from the cache.
func (s *Service) forget(h string) {
	s.mu.Lock()
	delete(s.cache, h)
	s.mu.Unlock()
}

// fromStore converts a stored key.
func fromStore(k store.Key) *Key {
	return &Key{ID: k.ID, User: k.User, Name: k.Name, CreatedAt: k.CreatedAt, ExpiresAt: k.ExpiresAt, RevokedAt: k.RevokedAt}
}

// CreateOptions describes a new key.
type CreateOptions struct {
	// User owns the key. Required.
	User string `json:"user"`
	// Name is an optional label.
	Name string `json:"name,omitempty"`
	// ExpiresAt is an optional expiry time.
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
}

// Create issues a new key and returns its secret (shown once) and record.
func (s *Service) Create(ctx context.Context, o CreateOptions) (string, *Key, error) {
	o.User = strings.TrimSpace(o.User)
	if o.User == "" {
		return "", nil, errors.New("a key needs a user")
	}
	if o.ExpiresAt != nil && !o.ExpiresAt.After(s.now()) {
		return "", nil, errors.New("expiry must be in the future")
	}
	secret, err := newSecret()
	if err != nil {
		return "", nil, err
	}
	id, err := newID()
	if err != nil {
		return "", nil, err
	}
	k := &Key{ID: id, User: o.User, Name: o.Name, CreatedAt: s.now().UTC(), ExpiresAt: o.ExpiresAt}
	err = s.store.Create(ctx, store.Key{ID: k.ID, Hash: Hash(secret), User: k.User, Name: k.Name, CreatedAt: k.CreatedAt, ExpiresAt: k.ExpiresAt})
	if err != nil {
		return "", nil, fmt.Errorf("storing key: %w", err)
	}
	return secret, k, nil
}

// Authenticate returns the active key whose secret is given, or one of the
// Err* errors. Secrets are never compared: lookup is by SHA-256 hash, so
// response timing can at most reveal something about a hash, which does not
// help to guess a secret.
func (s *Service) Authenticate(ctx context.Context, secret string) (*Key, error) {
	if secret == "" {
		return nil, ErrMissing
	}
	if !WellFormed(secret) {
		return nil, ErrMalformed
	}
	h := Hash(secret)
	s.mu.RLock()
	k, ok := s.cache[h]
	until, missed := s.misses[h]
	s.mu.RUnlock()
	if !ok && missed && s.now().Before(until) {
		return nil, ErrUnknown
	}
	if !ok {
		var err error
		if k, err = s.load(ctx, h); err != nil {
			return nil, err
		}
	}
	if k.RevokedAt != nil {
		return nil, ErrRevoked
	}
	if !k.Active(s.now()) {
		return nil, ErrExpired
	}
	return k, nil
}

// load reads the key with hash h from the store and caches it.
func (s *Service) load(ctx context.Context, h string) (*Key, error) {
	sk, err := s.store.ByHash(ctx, h)
	if errors.Is(err, store.ErrNotFound) {
		s.miss(h)
		return nil, ErrUnknown
	}
	if err != nil {
		return nil, fmt.Errorf("reading key: %w", err)
	}
	k := fromStore(sk)
	s.mu.Lock()
	s.cache[h] = k
	s.mu.Unlock()
	return k, nil
}

// miss remembers that the store does not know hash h. When maxMisses are
// remembered, the expired ones go, and all of them if none has expired: a
// flood of distinct secrets cannot grow the set.
func (s *Service) miss(h string) {
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.misses) >= maxMisses {
		for m, until := range s.misses {
			if !now.Before(until) {
				delete(s.misses, m)
			}
		}
		if len(s.misses) >= maxMisses {
			clear(s.misses)
		}
	}
	s.misses[h] = now.Add(missTTL)
}

// List returns the keys of user (all keys if user is empty), oldest first.
func (s *Service) List(ctx context.Context, user string) ([]*Key, error) {
	stored, err := s.store.List(ctx, user)
	if err != nil {
		return nil, err
	}
	out := make([]*Key, len(stored))
	for i, k := range stored {
		out[i] = fromStore(k)
	}
	return out, nil
}

// ErrNoSuchKey is returned by Revoke for an unknown key id.
var ErrNoSuchKey = errors.New("no such key")

// Revoke revokes the key with the given public id. Revoking a revoked key
// keeps its first revocation time.
func (s *Service) Revoke(ctx context.Context, id string) (*Key, error) {
	sk, err := s.store.Revoke(ctx, id, s.now())
	if errors.Is(err, store.ErrNotFound) {
		return nil, ErrNoSuchKey
	}
	if err != nil {
		return nil, err
	}
	s.forget(sk.Hash)
	return fromStore(sk), nil
}
