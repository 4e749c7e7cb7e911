package badger

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/caddy-air/caddy-air/store"
)

// Regenerate implements store.Keys: in one transaction the key moves from
// its hash's entry to the new hash's, its id and user index entries name
// the new hash, and an entry under k/p/ leads its previous hash to it
// until the grace ends; a previous hash it had loses its entry.
func (r *Keys) Regenerate(ctx context.Context, id, hash string, prevUntil time.Time) (store.Key, error) {
	var out store.Key
	var dropped []string
	err := r.db.Update(ctx, func(tx Txn) error {
		dropped = nil
		hb, err := tx.Get([]byte(keyIDPrefix + id))
		if err != nil {
			return err
		}
		old := string(hb)
		if _, err := tx.Get([]byte(keyHashPrefix + hash)); err == nil {
			return fmt.Errorf("key hash: %w", store.ErrExists)
		} else if !errors.Is(err, store.ErrNotFound) {
			return err
		}
		val, err := tx.Get([]byte(keyHashPrefix + old))
		if err != nil {
			return fmt.Errorf("reading key %s: %w", id, err)
		}
		var sk storedKey
		if err := json.Unmarshal(val, &sk); err != nil {
			return fmt.Errorf("decoding key %s: %w", id, err)
		}
		if sk.PrevHash != "" {
			if err := tx.Delete([]byte(keyPrevPrefix + sk.PrevHash)); err != nil {
				return err
			}
			dropped = append(dropped, sk.PrevHash)
		}
		until := prevUntil.UTC()
		sk.PrevHash, sk.PrevUntil = old, &until
		// The entry outlives the grace by a day: Authenticate judges
		// PrevUntil (and tells a client its secret was replaced), the
		// TTL only clears the entry away.
		if err := tx.Set([]byte(keyPrevPrefix+old), []byte(hash), max(time.Until(prevUntil), 0)+24*time.Hour); err != nil {
			return err
		}
		dropped = append(dropped, old)
		if val, err = json.Marshal(sk); err != nil {
			return err
		}
		if err := tx.Delete([]byte(keyHashPrefix + old)); err != nil {
			return err
		}
		for k, v := range map[string][]byte{keyHashPrefix + hash: val, keyIDPrefix + id: []byte(hash)} {
			if err := tx.Set([]byte(k), v, 0); err != nil {
				return err
			}
		}
		if err := tx.Set(keyUserKey(sk.User, sk.CreatedAt, sk.ID), []byte(hash), 0); err != nil {
			return err
		}
		out = sk.key(hash)
		return nil
	})
	if err != nil {
		return store.Key{}, err
	}
	r.notify(dropped...)
	return out, nil
}
