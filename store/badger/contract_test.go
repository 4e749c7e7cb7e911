package badger

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/caddy-air/caddy-air/store"
	"github.com/caddy-air/caddy-air/store/storetest"
)

// TestContract runs the store contract suite on Badger on disk.
func TestContract(t *testing.T) {
	var dirs sync.Map // store.Ledger → directory
	open := func(t *testing.T, dir string) store.Repos {
		t.Helper()
		r, err := OpenRepos(Config{Dir: dir})
		if err != nil {
			t.Fatal(err)
		}
		dirs.Store(r.Ledger, dir)
		return r
	}
	storetest.Run(t, storetest.Backend{
		Open: func(t *testing.T) store.Repos { return open(t, t.TempDir()) },
		Reopen: func(t *testing.T, r store.Repos) store.Repos {
			dir, _ := dirs.Load(r.Ledger)
			if err := r.Close(); err != nil {
				t.Fatal(err)
			}
			return open(t, dir.(string))
		},
		DropIndexes: func(t *testing.T, r store.Repos) {
			t.Helper()
			if err := dropKeyIndex(r.Keys.(*Keys).db); err != nil {
				t.Fatal(err)
			}
		},
	})
}

// dropKeyIndex deletes the index of keys by user and its marker, leaving
// db as a version before the index wrote it.
func dropKeyIndex(db *DB) error {
	ctx := context.Background()
	var keys [][]byte
	err := db.Scan(ctx, []byte(keyUserPrefix), ScanOptions{KeysOnly: true}, func(k, _ []byte) error {
		keys = append(keys, append([]byte(nil), k...))
		return nil
	})
	if err != nil {
		return err
	}
	if len(keys) == 0 {
		return errors.New("no key index entries to drop")
	}
	return db.Update(ctx, func(txn Txn) error {
		for _, k := range append(keys, []byte(keyUserIndexBuilt)) {
			if err := txn.Delete(k); err != nil {
				return err
			}
		}
		return nil
	})
}
