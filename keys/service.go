package keys

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/caddy-air/caddy-air/store"
)

// Store key layout: "k/h/<hash>" holds the Key JSON, "k/i/<id>" holds the
// hash, so that keys can be listed and revoked by id.
const (
	hashPrefix = "k/h/"
	idPrefix   = "k/i/"
)

// Service creates, lists, revokes and authenticates keys. It caches active
// keys in memory; since revocation goes through the same Service, it takes
// effect on the next request.
type Service struct {
	store store.Store
	now   func() time.Time

	mu    sync.RWMutex
	cache map[string]*Key // by hash
}

// NewService returns a Service over s.
func NewService(s store.Store) *Service {
	return &Service{store: s, now: time.Now, cache: make(map[string]*Key)}
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
	h := Hash(secret)
	val, err := json.Marshal(k)
	if err != nil {
		return "", nil, err
	}
	err = s.store.Update(ctx, func(tx store.Txn) error {
		if _, err := tx.Get([]byte(idPrefix + id)); err == nil {
			return fmt.Errorf("key id collision: %s", id)
		}
		if err := tx.Set([]byte(hashPrefix+h), val, 0); err != nil {
			return err
		}
		return tx.Set([]byte(idPrefix+id), []byte(h), 0)
	})
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
	s.mu.RUnlock()
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
	val, err := s.store.Get(ctx, []byte(hashPrefix+h))
	if errors.Is(err, store.ErrNotFound) {
		return nil, ErrUnknown
	}
	if err != nil {
		return nil, fmt.Errorf("reading key: %w", err)
	}
	k := new(Key)
	if err := json.Unmarshal(val, k); err != nil {
		return nil, fmt.Errorf("decoding key: %w", err)
	}
	s.mu.Lock()
	s.cache[h] = k
	s.mu.Unlock()
	return k, nil
}

// List returns the keys of user (all keys if user is empty), oldest first.
func (s *Service) List(ctx context.Context, user string) ([]*Key, error) {
	var out []*Key
	err := s.store.Scan(ctx, []byte(hashPrefix), store.ScanOptions{}, func(_, val []byte) error {
		k := new(Key)
		if err := json.Unmarshal(val, k); err != nil {
			return fmt.Errorf("decoding key: %w", err)
		}
		if user == "" || k.User == user {
			out = append(out, k)
		}
		return nil
	})
	sort.Slice(out, func(i, j int) bool { return out[i].CreatedAt.Before(out[j].CreatedAt) })
	return out, err
}

// ErrNoSuchKey is returned by Revoke for an unknown key id.
var ErrNoSuchKey = errors.New("no such key")

// Revoke revokes the key with the given public id. Revoking a revoked key
// keeps its first revocation time.
func (s *Service) Revoke(ctx context.Context, id string) (*Key, error) {
	var k *Key
	var h string
	err := s.store.Update(ctx, func(tx store.Txn) error {
		hb, err := tx.Get([]byte(idPrefix + id))
		if errors.Is(err, store.ErrNotFound) {
			return ErrNoSuchKey
		}
		if err != nil {
			return err
		}
		h = string(hb)
		val, err := tx.Get([]byte(hashPrefix + h))
		if err != nil {
			return fmt.Errorf("reading key %s: %w", id, err)
		}
		k = new(Key)
		if err := json.Unmarshal(val, k); err != nil {
			return err
		}
		if k.RevokedAt != nil {
			return nil
		}
		now := s.now().UTC()
		k.RevokedAt = &now
		val, err = json.Marshal(k)
		if err != nil {
			return err
		}
		return tx.Set([]byte(hashPrefix+h), val, 0)
	})
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	delete(s.cache, h)
	s.mu.Unlock()
	return k, nil
}
