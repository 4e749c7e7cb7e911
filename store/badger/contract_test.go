package badger

import (
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
	})
}
