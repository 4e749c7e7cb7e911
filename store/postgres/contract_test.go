package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/caddy-air/caddy-air/internal/pgtest"
	"github.com/caddy-air/caddy-air/store"
	"github.com/caddy-air/caddy-air/store/storetest"
)

// TestContract runs the contract suite of package store on PostgreSQL: a
// fresh database per test on the throwaway cluster.
func TestContract(t *testing.T) {
	open := func(t *testing.T, dsn string) store.Repos {
		db, err := Open(context.Background(), Options{DSN: dsn, Retention: 90 * 24 * time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		return db.Repos()
	}
	storetest.Run(t, storetest.Backend{
		Open: func(t *testing.T) store.Repos { return open(t, pgtest.DSN(t)) },
		Reopen: func(t *testing.T, r store.Repos) store.Repos {
			dsn := r.Closer.(*DB).dsn
			if err := r.Close(); err != nil {
				t.Fatal(err)
			}
			return open(t, dsn)
		},
	})
}
