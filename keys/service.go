package keys

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/caddy-air/caddy-air/store"
	"github.com/caddy-air/caddy-air/tags"
)

// Service creates, lists, revokes and authenticates keys. It caches active
// keys in memory and drops a key from the cache when the repository
// reports its revocation (store.Keys.Revocations), so that a revocation
// through any instance takes effect on the next request.
//
// It records when each key was last used without a write per request: a
// use is noted in memory at most once per TouchEvery and key, and the
// noted uses are written in one batch every TouchEvery (FlushUses).
type Service struct {
	// Limiter, if set, sets the spend limit of keys created with one. Set
	// it before the service is used.
	Limiter Limiter

	store store.Keys
	now   func() time.Time

	mu     sync.RWMutex
	cache  map[string]*entry    // by hash
	misses map[string]time.Time // hashes the store did not know, and until when that is trusted

	usedMu sync.Mutex
	used   map[string]time.Time // uses noted and not yet written, by key id
}

// entry is a cached key and the last use noted of it.
type entry struct {
	key *Key
	// noted is the time (unix nanos) of the last use noted for writing.
	noted atomic.Int64
}

// TouchEvery is how often a key's last use is noted at most, and how often
// noted uses are written.
const TouchEvery = time.Minute

// Limiter sets the spend limit of a key; billing.Budgets implements it.
type Limiter interface {
	// LimitKey sets the all-time spend limit of key id to limit, a decimal
	// amount in the price table's currency such as "5.00". It fails,
	// setting nothing, on a malformed or negative amount.
	LimitKey(ctx context.Context, id, limit string) error
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
	s := &Service{store: r, now: time.Now, cache: make(map[string]*entry), misses: make(map[string]time.Time), used: map[string]time.Time{}}
	r.Revocations(ctx, s.forget)
	go s.touchLoop(ctx)
	return s
}

// touchLoop writes the noted uses every TouchEvery until ctx ends.
func (s *Service) touchLoop(ctx context.Context) {
	t := time.NewTicker(TouchEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			// A failed write is retried at the next tick: FlushUses keeps
			// what it could not write.
			_ = s.FlushUses(ctx)
		}
	}
}

// noteUse notes that e's key was used at now, unless a use was noted
// less than TouchEvery before.
func (s *Service) noteUse(e *entry, now time.Time) {
	last := e.noted.Load()
	if now.UnixNano()-last < int64(TouchEvery) || !e.noted.CompareAndSwap(last, now.UnixNano()) {
		return
	}
	s.usedMu.Lock()
	s.used[e.key.ID] = now.UTC()
	s.usedMu.Unlock()
}

// FlushUses writes the uses noted since the last flush in one batch. On
// failure they are kept for the next flush. Call it before the store
// closes to keep the last minute's uses.
func (s *Service) FlushUses(ctx context.Context) error {
	s.usedMu.Lock()
	used := s.used
	s.used = map[string]time.Time{}
	s.usedMu.Unlock()
	if len(used) == 0 {
		return nil
	}
	err := s.store.Touch(ctx, used)
	if err != nil {
		s.usedMu.Lock()
		for id, at := range used {
			if cur, ok := s.used[id]; !ok || at.After(cur) {
				s.used[id] = at
			}
		}
		s.usedMu.Unlock()
	}
	return err
}

// forget drops the key with hash h from the cache.
func (s *Service) forget(h string) {
	s.mu.Lock()
	delete(s.cache, h)
	s.mu.Unlock()
}

// fromStore converts a stored key.
func fromStore(k store.Key) *Key {
	out := &Key{ID: k.ID, User: k.User, Name: k.Name, CreatedAt: k.CreatedAt, ExpiresAt: k.ExpiresAt, RevokedAt: k.RevokedAt,
		Models: k.Models, Tags: k.Tags, LastUsedAt: k.LastUsedAt, AllowIPs: k.AllowIPs, PreviousSecretUntil: k.PrevUntil, LogRequests: k.LogRequests, hash: k.Hash}
	// Stored lists were checked when set; an entry that does not parse
	// allows nothing.
	for _, c := range k.AllowIPs {
		if p, err := parsePrefix(c); err == nil {
			out.allow = append(out.allow, p)
		}
	}
	return out
}

// CreateOptions describes a new key.
type CreateOptions struct {
	// User owns the key. Required: at most MaxUserLen characters, none
	// of them a control character.
	User string `json:"user"`
	// Name is an optional label: at most MaxNameLen characters, none of
	// them a control character.
	Name string `json:"name,omitempty"`
	// ExpiresAt is an optional expiry time.
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
	// Models optionally restricts the key to these model ids and globs
	// (path.Match syntax, e.g. "claude-*"); empty allows every model.
	Models []string `json:"models,omitempty"`
	// Tags are the key's default tags (package tags' rules): the tags of
	// its requests that send no x-air-tags header.
	Tags []string `json:"tags,omitempty"`
	// Limit is an optional all-time spend limit of the key, a decimal
	// amount in the price table's currency such as "5.00". It needs the
	// service's Limiter.
	Limit string `json:"limit,omitempty"`
	// AllowIPs optionally restricts the key to clients in these CIDRs
	// (or single addresses), IPv4 or IPv6; at most MaxAllowIPs.
	AllowIPs []string `json:"allow_ips,omitempty"`
}

// Create issues a new key and returns its secret (shown once) and record.
func (s *Service) Create(ctx context.Context, o CreateOptions) (string, *Key, error) {
	o.User = strings.TrimSpace(o.User)
	if o.User == "" {
		return "", nil, errors.New("a key needs a user")
	}
	if err := checkText("user", o.User, MaxUserLen); err != nil {
		return "", nil, err
	}
	if err := checkText("name", o.Name, MaxNameLen); err != nil {
		return "", nil, err
	}
	if o.ExpiresAt != nil && !o.ExpiresAt.After(s.now()) {
		return "", nil, errors.New("expiry must be in the future")
	}
	models, err := checkModels(o.Models)
	if err != nil {
		return "", nil, err
	}
	if err := tags.Check(o.Tags); err != nil {
		return "", nil, fmt.Errorf("tags: %w", err)
	}
	if len(o.Tags) == 0 {
		o.Tags = nil
	}
	allow, prefixes, err := checkAllowIPs(o.AllowIPs)
	if err != nil {
		return "", nil, err
	}
	o.Limit = strings.TrimSpace(o.Limit)
	if o.Limit != "" && s.Limiter == nil {
		return "", nil, errors.New("a key's spend limit needs budgets, which this gateway does not keep")
	}
	secret, err := newSecret()
	if err != nil {
		return "", nil, err
	}
	id, err := newID()
	if err != nil {
		return "", nil, err
	}
	// The limit is set before the key exists, so that the key never
	// works without it; a limit left by a failed create names an id
	// nobody holds.
	if o.Limit != "" {
		if err := s.Limiter.LimitKey(ctx, id, o.Limit); err != nil {
			return "", nil, fmt.Errorf("limit: %w", err)
		}
	}
	k := &Key{ID: id, User: o.User, Name: o.Name, CreatedAt: s.now().UTC(), ExpiresAt: o.ExpiresAt, Models: models, Tags: o.Tags,
		AllowIPs: allow, hash: Hash(secret), allow: prefixes}
	err = s.store.Create(ctx, store.Key{ID: k.ID, Hash: k.hash, User: k.User, Name: k.Name, CreatedAt: k.CreatedAt,
		ExpiresAt: k.ExpiresAt, Models: models, Tags: o.Tags, AllowIPs: allow})
	if err != nil {
		return "", nil, fmt.Errorf("storing key: %w", err)
	}
	k.State = k.StateAt(s.now())
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
	now := s.now()
	s.mu.RLock()
	e, ok := s.cache[h]
	until, missed := s.misses[h]
	s.mu.RUnlock()
	if !ok && missed && now.Before(until) {
		return nil, ErrUnknown
	}
	if !ok {
		var err error
		if e, err = s.load(ctx, h); err != nil {
			return nil, err
		}
	}
	k := e.key
	if k.RevokedAt != nil {
		return nil, ErrRevoked
	}
	if h != k.hash && (k.PreviousSecretUntil == nil || !now.Before(*k.PreviousSecretUntil)) {
		// The key's previous secret, past its grace.
		return nil, ErrReplaced
	}
	if !k.Active(now) {
		return nil, ErrExpired
	}
	s.noteUse(e, now)
	return k, nil
}

// load reads the key with hash h from the store and caches it.
func (s *Service) load(ctx context.Context, h string) (*entry, error) {
	sk, err := s.store.ByHash(ctx, h)
	if errors.Is(err, store.ErrNotFound) {
		s.miss(h)
		return nil, ErrUnknown
	}
	if err != nil {
		return nil, fmt.Errorf("reading key: %w", err)
	}
	e := &entry{key: fromStore(sk)}
	if sk.LastUsedAt != nil {
		e.noted.Store(sk.LastUsedAt.UnixNano())
	}
	s.mu.Lock()
	if cur, ok := s.cache[h]; ok {
		e = cur // a concurrent load won: keep one entry per key
	} else {
		s.cache[h] = e
	}
	s.mu.Unlock()
	return e, nil
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

// List returns the keys of user (all keys if user is empty), oldest first,
// with their state and last use (the uses noted and not yet written
// included).
func (s *Service) List(ctx context.Context, user string) ([]*Key, error) {
	stored, err := s.store.List(ctx, user)
	if err != nil {
		return nil, err
	}
	now := s.now()
	s.usedMu.Lock()
	defer s.usedMu.Unlock()
	out := make([]*Key, len(stored))
	for i, sk := range stored {
		k := fromStore(sk)
		if at, ok := s.used[k.ID]; ok && (k.LastUsedAt == nil || at.After(*k.LastUsedAt)) {
			k.LastUsedAt = &at
		}
		k.State = k.StateAt(now)
		out[i] = k
	}
	return out, nil
}

// ErrNoSuchKey is returned by Revoke for an unknown key id.
var ErrNoSuchKey = errors.New("no such key")

// Revoke revokes the key with the given public id. Revoking a revoked key
// keeps its first revocation time.
func (s *Service) Revoke(ctx context.Context, id string) (*Key, error) {
	return s.changed(s.store.Revoke(ctx, id, s.now()))
}

// changed is the key that a store write (Revoke, Update) returned, or
// its error (ErrNoSuchKey for an unknown id); the key leaves this
// instance's cache, so that its next request reads the change.
func (s *Service) changed(sk store.Key, err error) (*Key, error) {
	if errors.Is(err, store.ErrNotFound) {
		return nil, ErrNoSuchKey
	}
	if err != nil {
		return nil, err
	}
	s.forget(sk.Hash)
	k := fromStore(sk)
	k.State = k.StateAt(s.now())
	return k, nil
}

// RevokeOwn revokes key id if user owns it; a key of another user is
// ErrNoSuchKey, as an unknown one, so that nothing tells a user which
// ids exist. It is the revocation a user (not an operator) may make.
func (s *Service) RevokeOwn(ctx context.Context, user, id string) (*Key, error) {
	stored, err := s.store.List(ctx, user)
	if err != nil {
		return nil, err
	}
	for _, k := range stored {
		if k.ID == id {
			return s.Revoke(ctx, id)
		}
	}
	return nil, ErrNoSuchKey
}
