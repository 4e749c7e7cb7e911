package badger

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/caddy-air/caddy-air/store"
)

// copyTree copies the files of dir into a new directory: what a kill -9 at
// that instant would leave on disk (the page cache included).
func copyTree(t *testing.T, dir string) string {
	t.Helper()
	dst := t.TempDir()
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o700)
		}
		src, err := os.Open(path)
		if err != nil {
			return err
		}
		defer src.Close()
		out, err := os.Create(filepath.Join(dst, rel))
		if err != nil {
			return err
		}
		_, err = io.Copy(out, src)
		return errors.Join(err, out.Close())
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// TestWriteSurvivesKill checks Write's guarantee: once it returned, its
// records are in the journal as a kill of the process leaves it (no sync
// needed), and a ledger opened on that journal counts them.
func TestWriteSurvivesKill(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	l := openLedger(t, openDB(t), dir)
	if err := l.Write(ctx, []store.Record{testRecord("r1", 5), testRecord("r2", 7)}); err != nil {
		t.Fatal(err)
	}
	killed := copyTree(t, dir)
	l2 := openLedger(t, openDB(t), killed)
	if got := ids(t, l2); got != "[r1 r2]" {
		t.Errorf("records after a kill right after Write: %s, want [r1 r2]", got)
	}
	if tot := usdTotals(t, l2); tot.Requests != 2 || tot.Cost != 12 {
		t.Errorf("totals after a kill right after Write: %+v, want 2 requests costing 12", tot)
	}
}

// TestWriteCountedOnceSynced checks that the DB counts written records only
// once a Sync covered them: Flush before the Sync counts none (reads see
// none), after it all.
func TestWriteCountedOnceSynced(t *testing.T) {
	ctx := context.Background()
	l := openLedger(t, openDB(t), t.TempDir())
	if err := l.Write(ctx, []store.Record{testRecord("r1", 5)}); err != nil {
		t.Fatal(err)
	}
	if err := l.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if tot := usdTotals(t, l); tot.Requests != 0 {
		t.Fatalf("an unsynced record is counted: %+v", tot)
	}
	if got := ids(t, l); got != "[]" {
		t.Fatalf("an unsynced record is read: %s", got)
	}
	if err := l.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if err := l.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if tot := usdTotals(t, l); tot.Requests != 1 || tot.Cost != 5 {
		t.Errorf("totals after the sync: %+v, want r1", tot)
	}
	if got := ids(t, l); got != "[r1]" {
		t.Errorf("records after the sync: %s, want [r1]", got)
	}
}

// TestWriteMachineCrashKeepsCountsConsistent checks what a crash of the
// machine that loses the journal's unsynced tail leaves: the DB counts no
// record that is gone (it counts synced records only), so the reopened
// ledger's aggregates and spend agree with its records, and nothing is
// counted twice.
func TestWriteMachineCrashKeepsCountsConsistent(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	dir := t.TempDir()
	l, err := OpenLedger(db, dir, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Write(ctx, []store.Record{testRecord("a1", 5), testRecord("a2", 5)}); err != nil {
		t.Fatal(err)
	}
	if err := l.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	synced := l.j.End()
	if err := l.Write(ctx, []store.Record{testRecord("b1", 100)}); err != nil {
		t.Fatal(err)
	}
	if err := l.Flush(ctx); err != nil { // counts what it may
		t.Fatal(err)
	}
	crashed := copyTree(t, dir)
	// The machine lost the unsynced tail: the last segment ends at the
	// synced position.
	seg := lastSegment(t, crashed)
	if err := os.Truncate(seg, synced.Offset); err != nil {
		t.Fatal(err)
	}
	// The dead process's DB state is what the DB holds now; the old
	// ledger stops counting (Close counts synced records only: none new).
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l2 := openLedger(t, db, crashed)
	if got := ids(t, l2); got != "[a1 a2]" {
		t.Errorf("records after the crash: %s, want [a1 a2]", got)
	}
	if tot := usdTotals(t, l2); tot.Requests != 2 || tot.Cost != 10 {
		t.Errorf("totals after the crash: %+v, want the 2 synced records (10): the DB counted a lost record", tot)
	}
	if err := l2.Write(ctx, []store.Record{testRecord("c1", 1)}); err != nil {
		t.Fatal(err)
	}
	if err := l2.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if err := l2.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if tot := usdTotals(t, l2); tot.Requests != 3 || tot.Cost != 11 {
		t.Errorf("totals after a new record: %+v, want 3 costing 11", tot)
	}
}

// lastSegment returns the path of the last journal segment in dir.
func lastSegment(t *testing.T, dir string) string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	last := ""
	for _, e := range entries {
		if e.Type().IsRegular() && strings.HasSuffix(e.Name(), ".seg") && e.Name() > last {
			last = e.Name()
		}
	}
	if last == "" {
		t.Fatalf("no journal segment in %s", dir)
	}
	return filepath.Join(dir, last)
}

// TestSyncBesideWrites checks that Sync runs beside Write and Append from
// other goroutines (the billing writer's syncer) without a race, a lost
// record or a record counted twice.
func TestSyncBesideWrites(t *testing.T) {
	ctx := context.Background()
	l := openLedger(t, openDB(t), t.TempDir())
	const writers, each = 4, 50
	var wg sync.WaitGroup
	stop := make(chan struct{})
	var syncs sync.WaitGroup
	syncs.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			if err := l.Sync(ctx); err != nil {
				t.Error(err)
				return
			}
		}
	})
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				rec := testRecord(fmt.Sprintf("w%d-%02d", w, i), 1)
				var err error
				if i%10 == 9 {
					err = l.Append(ctx, []store.Record{rec})
				} else {
					err = l.Write(ctx, []store.Record{rec})
				}
				if err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(stop)
	syncs.Wait()
	if err := l.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if err := l.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if tot := usdTotals(t, l); tot.Requests != writers*each || tot.Cost != writers*each {
		t.Errorf("totals %+v, want %d records counted once", tot, writers*each)
	}
}
