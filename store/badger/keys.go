package badger

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/caddy-air/caddy-air/store"
)

// Key layout of the keys repository, unchanged from the versions that kept
// keys in the key-value store directly:
//
//	k/h/<hash>  the key (JSON)
//	k/i/<id>    the key's hash
//	k/p/<hash>  the current hash of the key whose previous hash this is
//	            (after a Regenerate, until its grace ends)
//
// and the index by user, which is newer (see keyUserPrefix).
const (
	keyHashPrefix = "k/h/"
	keyIDPrefix   = "k/i/"
	keyPrevPrefix = "k/p/"
)

// storedKey is a key's JSON in the store.
type storedKey struct {
	ID        string     `json:"id"`
	User      string     `json:"user"`
	Name      string     `json:"name,omitempty"`
	CreatedAt time.Time  `json:"created_at"`
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
	RevokedAt *time.Time `json:"revoked_at,omitempty"`
	Models    []string   `json:"models,omitempty"`
	Tags      []string   `json:"tags,omitempty"`
	LastUsed  *time.Time `json:"last_used,omitempty"`
	PrevHash  string     `json:"prev_hash,omitempty"`
	PrevUntil *time.Time `json:"prev_until,omitempty"`
	AllowIPs  []string   `json:"allow_ips,omitempty"`
	// LogRequests is the request-log switch.
	LogRequests bool `json:"log_requests,omitempty"`
}

func (s *storedKey) key(hash string) store.Key {
	return store.Key{ID: s.ID, Hash: hash, User: s.User, Name: s.Name, CreatedAt: s.CreatedAt, ExpiresAt: s.ExpiresAt,
		RevokedAt: s.RevokedAt, Models: s.Models, Tags: s.Tags, LastUsedAt: s.LastUsed, PrevHash: s.PrevHash, PrevUntil: s.PrevUntil,
		AllowIPs: s.AllowIPs, LogRequests: s.LogRequests}
}

// Keys is the keys repository on a DB. Revocations are reported to the
// watchers of this process only: one Badger store serves one instance.
type Keys struct {
	db *DB
	// indexed is set once the index by user has every key.
	indexed atomic.Bool

	mu       sync.Mutex
	watchers map[int]func(string)
	next     int
}

// NewKeys returns the keys repository of db, without building the index
// of keys by user: List reads every key of a store that lacks it (use
// OpenKeys).
func NewKeys(db *DB) *Keys { return &Keys{db: db, watchers: map[int]func(string){}} }

// Create implements store.Keys.
func (r *Keys) Create(ctx context.Context, k store.Key) error {
	val, err := json.Marshal(storedKey{ID: k.ID, User: k.User, Name: k.Name, CreatedAt: k.CreatedAt, ExpiresAt: k.ExpiresAt,
		RevokedAt: k.RevokedAt, Models: k.Models, Tags: k.Tags, LastUsed: k.LastUsedAt, AllowIPs: k.AllowIPs})
	if err != nil {
		return err
	}
	return r.db.Update(ctx, func(tx Txn) error {
		if _, err := tx.Get([]byte(keyIDPrefix + k.ID)); err == nil {
			return fmt.Errorf("key id %s: %w", k.ID, store.ErrExists)
		}
		if _, err := tx.Get([]byte(keyHashPrefix + k.Hash)); err == nil {
			return fmt.Errorf("key hash: %w", store.ErrExists)
		}
		if err := tx.Set([]byte(keyHashPrefix+k.Hash), val, 0); err != nil {
			return err
		}
		if err := tx.Set(keyUserKey(k.User, k.CreatedAt, k.ID), []byte(k.Hash), 0); err != nil {
			return err
		}
		return tx.Set([]byte(keyIDPrefix+k.ID), []byte(k.Hash), 0)
	})
}

// ByHash implements store.Keys: by the key's hash, else by its previous
// hash's entry.
func (r *Keys) ByHash(ctx context.Context, hash string) (store.Key, error) {
	val, err := r.db.Get(ctx, []byte(keyHashPrefix+hash))
	if errors.Is(err, store.ErrNotFound) {
		cur, perr := r.db.Get(ctx, []byte(keyPrevPrefix+hash))
		if perr != nil {
			return store.Key{}, perr
		}
		hash = string(cur)
		val, err = r.db.Get(ctx, []byte(keyHashPrefix+hash))
	}
	if err != nil {
		return store.Key{}, err
	}
	var sk storedKey
	if err := json.Unmarshal(val, &sk); err != nil {
		return store.Key{}, fmt.Errorf("decoding key: %w", err)
	}
	return sk.key(hash), nil
}

// List implements store.Keys: a user's keys come from the index by user
// (once it is complete), every key from a scan of them all.
func (r *Keys) List(ctx context.Context, user string) ([]store.Key, error) {
	if user != "" && r.indexed.Load() {
		return r.listUser(ctx, user)
	}
	var out []store.Key
	err := r.db.Scan(ctx, []byte(keyHashPrefix), ScanOptions{}, func(k, val []byte) error {
		var sk storedKey
		if err := json.Unmarshal(val, &sk); err != nil {
			return fmt.Errorf("decoding key: %w", err)
		}
		if user == "" || sk.User == user {
			out = append(out, sk.key(string(k[len(keyHashPrefix):])))
		}
		return nil
	})
	sort.Slice(out, func(i, j int) bool {
		if !out[i].CreatedAt.Equal(out[j].CreatedAt) {
			return out[i].CreatedAt.Before(out[j].CreatedAt)
		}
		return out[i].ID < out[j].ID
	})
	return out, err
}

// Revoke implements store.Keys.
func (r *Keys) Revoke(ctx context.Context, id string, at time.Time) (store.Key, error) {
	return r.rewrite(ctx, id, func(sk *storedKey) bool {
		if sk.RevokedAt != nil {
			return false // the first revocation's time stays
		}
		at := at.UTC()
		sk.RevokedAt = &at
		return true
	})
}

// Update implements store.Keys: the key is rewritten in one transaction,
// and the watchers of this process drop it from their caches.
func (r *Keys) Update(ctx context.Context, id string, ch store.KeyChange) (store.Key, error) {
	return r.rewrite(ctx, id, func(sk *storedKey) bool {
		sk.Name, sk.Models, sk.ExpiresAt, sk.AllowIPs, sk.LogRequests = ch.Name, ch.Models, ch.ExpiresAt, ch.AllowIPs, ch.LogRequests
		if len(sk.AllowIPs) == 0 {
			sk.AllowIPs = nil
		}
		if sk.ExpiresAt != nil {
			e := sk.ExpiresAt.UTC()
			sk.ExpiresAt = &e
		}
		if len(sk.Models) == 0 {
			sk.Models = nil
		}
		return true
	})
}

// rewrite applies edit to key id in one transaction and writes the key
// back if edit reports a change, after which the watchers of this process
// drop it from their caches. It returns the key as it stands.
func (r *Keys) rewrite(ctx context.Context, id string, edit func(*storedKey) bool) (store.Key, error) {
	var out store.Key
	var changed bool
	err := r.db.Update(ctx, func(tx Txn) error {
		hb, err := tx.Get([]byte(keyIDPrefix + id))
		if err != nil {
			return err
		}
		h := string(hb)
		val, err := tx.Get([]byte(keyHashPrefix + h))
		if err != nil {
			return fmt.Errorf("reading key %s: %w", id, err)
		}
		var sk storedKey
		if err := json.Unmarshal(val, &sk); err != nil {
			return fmt.Errorf("decoding key %s: %w", id, err)
		}
		// A retried transaction starts from the stored key again.
		if changed = edit(&sk); changed {
			if val, err = json.Marshal(sk); err != nil {
				return err
			}
			if err := tx.Set([]byte(keyHashPrefix+h), val, 0); err != nil {
				return err
			}
		}
		out = sk.key(h)
		return nil
	})
	if err != nil {
		return store.Key{}, err
	}
	if changed {
		r.notify(out.Hash, out.PrevHash)
	}
	return out, nil
}

// notify tells the watchers of this process that the keys with hashes
// changed.
func (r *Keys) notify(hashes ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, h := range hashes {
		if h == "" {
			continue
		}
		for _, fn := range r.watchers {
			fn(h)
		}
	}
}

// Touch implements store.Keys: one transaction rewrites the keys whose
// last use moves forward.
func (r *Keys) Touch(ctx context.Context, used map[string]time.Time) error {
	if len(used) == 0 {
		return nil
	}
	return r.db.Update(ctx, func(tx Txn) error {
		for id, at := range used {
			hb, err := tx.Get([]byte(keyIDPrefix + id))
			if errors.Is(err, store.ErrNotFound) {
				continue
			}
			if err != nil {
				return err
			}
			val, err := tx.Get([]byte(keyHashPrefix + string(hb)))
			if err != nil {
				return fmt.Errorf("reading key %s: %w", id, err)
			}
			var sk storedKey
			if err := json.Unmarshal(val, &sk); err != nil {
				return fmt.Errorf("decoding key %s: %w", id, err)
			}
			if sk.LastUsed != nil && !at.After(*sk.LastUsed) {
				continue
			}
			at := at.UTC()
			sk.LastUsed = &at
			if val, err = json.Marshal(sk); err != nil {
				return err
			}
			if err := tx.Set([]byte(keyHashPrefix+string(hb)), val, 0); err != nil {
				return err
			}
		}
		return nil
	})
}

// Revocations implements store.Keys.
func (r *Keys) Revocations(ctx context.Context, fn func(hash string)) {
	r.mu.Lock()
	id := r.next
	r.next++
	r.watchers[id] = fn
	r.mu.Unlock()
	go func() {
		<-ctx.Done()
		r.mu.Lock()
		delete(r.watchers, id)
		r.mu.Unlock()
	}()
}

// Interface guard.
var _ store.Keys = (*Keys)(nil)
