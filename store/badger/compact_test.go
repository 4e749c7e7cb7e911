package badger

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestCompactsOnDemand writes far more than level 0 holds before it
// stalls writes (numLevelZeroTablesStall memtables of 1 MiB), with
// Badger's own compactors off: the writes must go through, level 0 must be
// compacted after them, and every key must read back, also after a reopen.
func TestCompactsOnDemand(t *testing.T) {
	dir := t.TempDir()
	db := open(t, dir)
	ctx := context.Background()
	value := bytes.Repeat([]byte("v"), 900) // below the value threshold: in the LSM tree
	const keys, perTxn = 16000, 50          // about 14 MiB, 14 memtables
	key := func(i int) []byte { return fmt.Appendf(nil, "k%06d", i) }
	done := make(chan error, 1)
	go func() {
		for i := 0; i < keys; i += perTxn {
			err := db.Update(ctx, func(txn Txn) error {
				for j := i; j < i+perTxn; j++ {
					if err := txn.Set(key(j), value, 0); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(2 * time.Minute):
		t.Fatalf("writes stalled: level 0 holds %d tables", db.level0Tables())
	}
	// One more write after the last flush arms a check that sees it.
	if err := db.Set(ctx, []byte("last"), []byte("x"), 0); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for db.level0Tables() >= numLevelZeroTables {
		if time.Now().After(deadline) {
			t.Fatalf("level 0 still holds %d tables", db.level0Tables())
		}
		time.Sleep(50 * time.Millisecond)
	}
	check := func(db *DB) {
		t.Helper()
		for _, i := range []int{0, 1, keys / 2, keys - 1} {
			if v, err := db.Get(ctx, key(i)); err != nil || !bytes.Equal(v, value) {
				t.Fatalf("key %d: %d bytes, %v", i, len(v), err)
			}
		}
		n := 0
		if err := db.Scan(ctx, []byte("k"), ScanOptions{KeysOnly: true}, func(_, _ []byte) error { n++; return nil }); err != nil {
			t.Fatal(err)
		}
		if n != keys {
			t.Fatalf("scan found %d keys, want %d", n, keys)
		}
	}
	check(db)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = open(t, dir)
	defer db.Close()
	check(db)
}

// TestTablesSize: only Badger's table files count towards the size that
// decides between on-demand compaction and Badger's compactors.
func TestTablesSize(t *testing.T) {
	dir := t.TempDir()
	for name, size := range map[string]int{"000001.sst": 300, "000002.sst": 700, "000001.vlog": 5000, "MANIFEST": 90} {
		if err := os.WriteFile(filepath.Join(dir, name), make([]byte, size), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if got := tablesSize(dir); got != 1000 {
		t.Errorf("tablesSize = %d, want 1000 (the .sst files only)", got)
	}
	if got := tablesSize(filepath.Join(dir, "missing")); got != 0 {
		t.Errorf("tablesSize of a missing folder = %d, want 0", got)
	}
}

// TestCloseStalled closes a store whose level 0 is full
// (numLevelZeroTablesStall tables, before the compaction check came):
// Badger's flush then waits for a compaction that only the store runs,
// and Badger's Close waited for the flush forever.
func TestCloseStalled(t *testing.T) {
	db, err := Open(Options{Dir: t.TempDir(), GCInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	// No compaction check comes: as if Close came within one.
	db.compactArmed.Store(true)
	ctx := context.Background()
	value := bytes.Repeat([]byte("v"), 900)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			if err := db.Set(ctx, fmt.Appendf(nil, "k%07d", i), value, 0); err != nil {
				return // closed
			}
		}
	}()
	deadline := time.Now().Add(60 * time.Second)
	for db.level0Tables() < numLevelZeroTablesStall {
		if time.Now().After(deadline) {
			t.Fatalf("level 0 never reached %d tables (%d)", numLevelZeroTablesStall, db.level0Tables())
		}
		time.Sleep(time.Millisecond)
	}
	// Writes go on until the next memtable waits for level 0 too.
	time.Sleep(200 * time.Millisecond)
	closed := make(chan error, 1)
	go func() { closed <- db.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Close did not return within 30 s with level 0 full")
	}
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("a write did not return within 30 s of Close")
	}
}
