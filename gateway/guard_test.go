package gateway

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"go.uber.org/zap"
)

// TestSparseHoles checks that the margin counts what sparse files may
// still claim, as Badger's memory-mapped files do.
func TestSparseHoles(t *testing.T) {
	dir := t.TempDir()
	f, err := os.Create(filepath.Join(dir, "000001.vlog"))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(32 << 20); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(make([]byte, 1<<20), 0); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := os.WriteFile(filepath.Join(dir, "dense"), make([]byte, 4<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := sparseHoles(dir); got < 30<<20 || got > 31<<20 {
		t.Errorf("holes %d bytes, want 31 MiB (32 MiB claimed, 1 MiB written; the dense file has none)", got)
	}
}

// TestStorageGuard checks that billable work is refused with 507
// storage_full while free space is below the margin or the ledger is
// backlogged, and accepted again once it is not, without a restart.
func TestStorageGuard(t *testing.T) {
	var backlog error
	g := NewGuard(t.TempDir(), 1, nil, func() error { return backlog }, zap.NewNop())
	if e := g.Check(); e != nil {
		t.Fatalf("refused with room to spare: %v", e)
	}
	g.minFree.Store(1 << 62) // more than any disk
	g.measure()
	e := g.Check()
	if e == nil || e.Status != 507 || *e.Code != "storage_full" || e.RetryAfter == 0 {
		t.Fatalf("check with no room: %+v", e)
	}
	g.minFree.Store(1)
	g.measure()
	if e := g.Check(); e != nil {
		t.Errorf("still refused once there is room: %v", e)
	}
	backlog = errors.New("65537 ledger records wait for the storage")
	g.measure()
	if e := g.Check(); e == nil || e.Status != 507 {
		t.Errorf("a backlogged ledger is accepted: %+v", e)
	}
}

// TestStorageGuardMeasuresOnDemand: with no timer, the first check after a
// measure expired measures again, so a disk that filled while the gateway
// was idle refuses the next billable request, and one that was freed
// accepts it.
func TestStorageGuardMeasuresOnDemand(t *testing.T) {
	g := NewGuard(t.TempDir(), 1, nil, nil, zap.NewNop())
	g.minFree.Store(1 << 62)
	if e := g.Check(); e != nil {
		t.Fatalf("a measure that has not expired was renewed: %v", e)
	}
	g.due.Store(0) // guardInterval passed
	if e := g.Check(); e == nil || e.Status != 507 {
		t.Fatalf("the disk filled during a pause, and the next request is accepted: %+v", e)
	}
	g.minFree.Store(1)
	g.due.Store(0)
	if e := g.Check(); e != nil {
		t.Errorf("space came back, and the next request is refused: %v", e)
	}
}
