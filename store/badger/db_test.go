package badger

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/caddy-air/caddy-air/store"
)

func open(t *testing.T, dir string) *DB {
	t.Helper()
	db, err := Open(Options{Dir: dir, GCInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	return db
}

func TestPersistsAcrossReopen(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	db := open(t, dir)
	if err := db.Set(ctx, []byte("a"), []byte("1"), 0); err != nil {
		t.Fatal(err)
	}
	db.Close()
	db = open(t, dir)
	defer db.Close()
	v, err := db.Get(ctx, []byte("a"))
	if err != nil || string(v) != "1" {
		t.Fatalf("after reopen: %q, %v", v, err)
	}
	if _, err := db.Get(ctx, []byte("missing")); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("missing key: %v", err)
	}
}

func TestTTL(t *testing.T) {
	db := open(t, t.TempDir())
	defer db.Close()
	ctx := context.Background()
	if err := db.Set(ctx, []byte("short"), []byte("x"), 1500*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if err := db.Set(ctx, []byte("long"), []byte("y"), time.Hour); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Get(ctx, []byte("short")); err != nil {
		t.Fatalf("fresh entry: %v", err)
	}
	time.Sleep(3 * time.Second)
	if _, err := db.Get(ctx, []byte("short")); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("expired entry: %v", err)
	}
	if _, err := db.Get(ctx, []byte("long")); err != nil {
		t.Fatalf("unexpired entry: %v", err)
	}
}

func TestScanOrder(t *testing.T) {
	db := open(t, t.TempDir())
	defer db.Close()
	ctx := context.Background()
	for _, k := range []string{"p/2", "p/1", "p/3", "q/1", "o/9"} {
		if err := db.Set(ctx, []byte(k), []byte(k), 0); err != nil {
			t.Fatal(err)
		}
	}
	for i, tc := range []struct {
		opts ScanOptions
		stop int
		want string
	}{
		{ScanOptions{}, 0, "p/1,p/2,p/3,"},
		{ScanOptions{Reverse: true}, 0, "p/3,p/2,p/1,"},
		{ScanOptions{Reverse: true}, 2, "p/3,p/2,"},
		{ScanOptions{KeysOnly: true}, 1, "p/1,"},
		{ScanOptions{Start: []byte("p/2")}, 0, "p/2,p/3,"},
		{ScanOptions{Start: []byte("p/15")}, 0, "p/2,p/3,"},
		{ScanOptions{Start: []byte("p/4")}, 0, ""},
		{ScanOptions{Start: []byte("a")}, 0, "p/1,p/2,p/3,"},
		{ScanOptions{Start: []byte("p/2"), Reverse: true}, 0, "p/2,p/1,"},
		{ScanOptions{Start: []byte("p/25"), Reverse: true}, 0, "p/2,p/1,"},
		{ScanOptions{Start: []byte("p/9"), Reverse: true}, 0, "p/3,p/2,p/1,"},
		{ScanOptions{Start: []byte("p/0"), Reverse: true}, 0, ""},
		{ScanOptions{Start: []byte("a"), Reverse: true}, 0, "p/3,p/2,p/1,"},
	} {
		got := ""
		n := 0
		err := db.Scan(ctx, []byte("p/"), tc.opts, func(k, v []byte) error {
			if !tc.opts.KeysOnly && string(v) != string(k) {
				return fmt.Errorf("value %q for key %q", v, k)
			}
			got += string(k) + ","
			n++
			if n == tc.stop {
				return store.ErrStop
			}
			return nil
		})
		if err != nil || got != tc.want {
			t.Errorf("Test %d: got %q, %v; want %q", i, got, err, tc.want)
		}
	}
}

// TestUpdateIsAtomic increments one counter from many goroutines; write
// conflicts must be retried so that no increment is lost.
func TestUpdateIsAtomic(t *testing.T) {
	db := open(t, t.TempDir())
	defer db.Close()
	ctx := context.Background()
	const n = 40
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := db.Update(ctx, func(tx Txn) error {
				v, err := tx.Get([]byte("ctr"))
				if err != nil && !errors.Is(err, store.ErrNotFound) {
					return err
				}
				return tx.Set([]byte("ctr"), append(v, 'x'), 0)
			})
			if err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	v, _ := db.Get(ctx, []byte("ctr"))
	if len(v) != n {
		t.Fatalf("counter = %d, want %d", len(v), n)
	}
}
