package badger

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/dgraph-io/badger/v4"
	"go.uber.org/zap"

	"github.com/caddy-air/caddy-air/store"
)

// The keys' index by user: one entry per key, written in the transaction
// that creates the key, so that a user's keys are read without reading
// anyone else's. A key's user and creation time never change, so neither
// does its entry.
//
//	k/u/<user>/<created>/<id>  the key's hash; <created> is 24 hex digits that sort by time
//	k/ub                       set once every key has its entry
//
// Stores written before the index have no entries: OpenKeys builds them
// once, with a scan of every key, then sets k/ub. The entries are written
// with Set, so a build cut short by a crash is simply done again at the
// next start; until k/ub is set, List reads every key.
const (
	keyUserPrefix     = "k/u/"
	keyUserIndexBuilt = "k/ub"
)

// keyUserPrefixOf is the prefix of the index entries of user's keys.
func keyUserPrefixOf(user string) []byte { return []byte(keyUserPrefix + esc(user) + "/") }

// keyUserKey is the index entry of the key id of user created at created.
// The time is the seconds since 1970 with the sign bit flipped (so that
// times before 1970 sort first) and the nanoseconds, in hex.
func keyUserKey(user string, created time.Time, id string) []byte {
	return fmt.Appendf(keyUserPrefixOf(user), "%016x%08x/%s", uint64(created.Unix())^1<<63, created.Nanosecond(), esc(id))
}

// OpenKeys returns the keys repository of db, after building the index
// of keys by user if db has keys written before it (see keyUserPrefix).
func OpenKeys(ctx context.Context, db *DB, log *zap.Logger) (*Keys, error) {
	r := NewKeys(db)
	if err := r.buildIndex(ctx, log); err != nil {
		return nil, fmt.Errorf("building the key index by user: %w", err)
	}
	return r, nil
}

// buildIndex gives every key its index entry, once, and marks the index
// complete. A key that cannot be decoded is logged and left out (List("")
// reports it).
func (r *Keys) buildIndex(ctx context.Context, log *zap.Logger) error {
	if _, err := r.db.Get(ctx, []byte(keyUserIndexBuilt)); err == nil {
		r.indexed.Store(true)
		return nil
	} else if !errors.Is(err, store.ErrNotFound) {
		return err
	}
	batch := batchSetter{ctx: ctx, db: r.db}
	n := 0
	err := r.db.Scan(ctx, []byte(keyHashPrefix), ScanOptions{}, func(k, v []byte) error {
		hash := k[len(keyHashPrefix):]
		var sk storedKey
		if err := json.Unmarshal(v, &sk); err != nil {
			log.Warn("key left out of the index by user: undecodable", zap.ByteString("hash", hash), zap.Error(err))
			return nil
		}
		n++
		return batch.set(keyUserKey(sk.User, sk.CreatedAt, sk.ID), append([]byte(nil), hash...))
	})
	if err == nil {
		err = batch.flush()
	}
	if err != nil {
		return err
	}
	if err := r.db.Set(ctx, []byte(keyUserIndexBuilt), []byte{1}, 0); err != nil {
		return err
	}
	if n > 0 {
		log.Info("built the key index by user", zap.Int("keys", n))
	}
	r.indexed.Store(true)
	return nil
}

// listUser returns user's keys from the index, oldest first, reading the
// entries and the keys in one snapshot.
func (r *Keys) listUser(ctx context.Context, user string) ([]store.Key, error) {
	var out []store.Key
	err := r.db.db.View(func(txn *badger.Txn) error {
		prefix := keyUserPrefixOf(user)
		o := badger.DefaultIteratorOptions
		o.Prefix = prefix
		o.PrefetchSize = 16
		it := txn.NewIterator(o)
		defer it.Close()
		for it.Seek(prefix); it.ValidForPrefix(prefix); it.Next() {
			if err := ctx.Err(); err != nil {
				return err
			}
			hash, err := it.Item().ValueCopy(nil)
			if err != nil {
				return err
			}
			item, err := txn.Get([]byte(keyHashPrefix + string(hash)))
			if errors.Is(err, badger.ErrKeyNotFound) {
				continue
			}
			if err != nil {
				return err
			}
			var sk storedKey
			if err := item.Value(func(v []byte) error { return json.Unmarshal(v, &sk) }); err != nil {
				return fmt.Errorf("decoding key: %w", err)
			}
			out = append(out, sk.key(string(hash)))
		}
		return nil
	})
	return out, err
}
