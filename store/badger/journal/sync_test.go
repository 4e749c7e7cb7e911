package journal

import (
	"fmt"
	"sync"
	"testing"
	"time"
)

// TestSyncBesideAppends checks that Sync may run from another goroutine
// while the writer appends and starts new segments (a finished segment is
// closed by the Sync that still uses it, not under it): no race, no failed
// sync, and every entry is there after a reopen.
func TestSyncBesideAppends(t *testing.T) {
	dir := t.TempDir()
	j, err := Open(Options{Dir: dir, SegmentSize: 4 << 10, Preallocate: 8 << 10})
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	syncs := 0
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			if err := j.Sync(); err != nil {
				t.Error(err)
				return
			}
			syncs++
		}
	})
	const n = 2000
	for i := range n {
		if _, _, err := j.Append(entries(fmt.Sprintf("entry %04d with some padding to fill segments", i))); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	if len(j.retired) != 0 || len(j.syncing) != 0 {
		t.Errorf("%d retired segments still open, %d files syncing, after every Sync ended", len(j.retired), len(j.syncing))
	}
	if segs := len(j.segs); segs < 10 {
		t.Fatalf("%d segments: the test did not start new segments under syncs", segs)
	}
	j2, err := Open(Options{Dir: dir, SegmentSize: 4 << 10, Preallocate: 8 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer j2.Close()
	got := scanAll(t, j2, Pos{}, time.Time{})
	if len(got) != n || got[n-1] != fmt.Sprintf("entry %04d with some padding to fill segments", n-1) {
		t.Fatalf("%d entries after a reopen, want %d (%d syncs ran beside the appends)", len(got), n, syncs)
	}
}
