//go:build linux

package badger

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/caddy-air/caddy-air/internal/crashtest"
	"github.com/caddy-air/caddy-air/store"
)

// roomChildEnv holds the arguments of TestRoomChild, "mode dir", which runs
// only in a test binary that a TestRoom* test started.
const roomChildEnv = "BADGER_ROOM_CHILD"

// TestRoomFullDisk writes to a store on a tmpfs that another file has
// filled to the last byte, in a child process: Badger writes through
// memory maps of sparse files, and before the store kept room a write on
// a full disk killed the process with SIGBUS. Every write must be refused
// with store.ErrStorageFull instead, the child must live, and once the
// filler is removed writes resume, through memtable rotations and
// flushes, without reopening the store.
func TestRoomFullDisk(t *testing.T) {
	runRoomChild(t, "full")
}

// TestRoomAllocated proves the second half of the mechanism: the files
// that Badger maps have their blocks, so that even a write that the
// free-space check let through (here the check is told the disk is empty)
// cannot fault on a disk that filled meanwhile, as long as it does not
// start a new memtable.
func TestRoomAllocated(t *testing.T) {
	runRoomChild(t, "allocated")
}

// TestRoomClose closes the store on a disk full to the last byte: Badger's
// last flush would fault, so the store is left as a crash leaves it, and
// its next open finds everything written before.
func TestRoomClose(t *testing.T) {
	dir := runRoomChild(t, "close")
	db := open(t, dir)
	defer db.Close()
	if v, err := db.Get(context.Background(), []byte("before")); err != nil || string(v) != "1" {
		t.Fatalf("after a close on a full disk: %q %v", v, err)
	}
}

// runRoomChild runs TestRoomChild in mode on a fresh 64 MiB tmpfs, fails
// with its output unless it exits cleanly, and returns the tmpfs.
func runRoomChild(t *testing.T, mode string) (dir string) {
	dir = mountTmpfs(t, 64<<20)
	cmd := crashtest.Child(t, "TestRoomChild", roomChildEnv, mode+" "+dir)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	// The runtime turns a SIGBUS in Go code into "unexpected fault
	// address" and exit status 2.
	if i := strings.Index(out.String(), "unexpected fault address"); i >= 0 {
		t.Fatalf("the store's process died on a full disk: %.300s", out.String()[i:])
	}
	if err != nil || !strings.Contains(out.String(), "PASS") {
		t.Fatalf("the store's process: %v\n%s", err, tail(out.String()))
	}
	return dir
}

// TestRoomChild is the child of TestRoomFullDisk and TestRoomAllocated.
func TestRoomChild(t *testing.T) {
	mode, dir, ok := strings.Cut(os.Getenv(roomChildEnv), " ")
	if !ok {
		return // run by the TestRoom* tests only
	}
	ctx := context.Background()
	db := open(t, dir)
	closed := false
	defer func() {
		if !closed {
			_ = db.Close()
		}
	}()
	if err := db.Set(ctx, []byte("before"), []byte("1"), 0); err != nil {
		t.Fatal(err)
	}
	filler := fill(t, dir)
	value := bytes.Repeat([]byte("v"), 200)
	switch mode {
	case "full":
		// 2,000 writes of 200 bytes cross a hundred pages of the
		// memtable's log.
		for i := range 2000 {
			err := db.Set(ctx, fmt.Appendf(nil, "full-%05d", i), value, 0)
			if !errors.Is(err, store.ErrStorageFull) {
				t.Fatalf("write %d on a full disk: %v, want store.ErrStorageFull", i, err)
			}
		}
		if err := db.Update(ctx, func(txn Txn) error { return txn.Set([]byte("u"), value, 0) }); !errors.Is(err, store.ErrStorageFull) {
			t.Fatalf("update on a full disk: %v", err)
		}
		if err := db.Delete(ctx, []byte("before")); !errors.Is(err, store.ErrStorageFull) {
			t.Fatalf("delete on a full disk: %v", err)
		}
		// The repositories that write with transactions of their own.
		task := store.TaskRecord{ID: "task_1", User: "u", Created: time.Now(), Expires: time.Now().Add(time.Hour), Data: value}
		if err := NewTasks(db).Insert(ctx, task); !errors.Is(err, store.ErrStorageFull) {
			t.Fatalf("a task insert on a full disk: %v", err)
		}
		if _, err := db.Get(ctx, []byte("before")); err != nil {
			t.Fatalf("a read on a full disk: %v", err)
		}
		if err := os.Remove(filler); err != nil {
			t.Fatal(err)
		}
		// 8 MiB of writes: several memtables, each flushed to a table,
		// and values over the value threshold in the value log.
		big := bytes.Repeat([]byte("b"), 4<<10)
		for i := range 2000 {
			v := value
			if i%4 == 0 {
				v = big
			}
			if err := db.Set(ctx, fmt.Appendf(nil, "after-%05d", i), v, 0); err != nil {
				t.Fatalf("write %d after the disk was freed: %v", i, err)
			}
		}
		if got, err := db.Get(ctx, []byte("after-01996")); err != nil || !bytes.Equal(got, big) {
			t.Fatalf("reading back after the disk was freed: %d bytes, %v", len(got), err)
		}
	case "close":
		if err := db.Close(); !errors.Is(err, store.ErrStorageFull) {
			t.Fatalf("close on a full disk: %v, want store.ErrStorageFull", err)
		}
		closed = true
		if err := os.Remove(filler); err != nil {
			t.Fatal(err)
		}
		// TestRoomClose reopens the store once this process has exited
		// and released its lock.
	case "allocated":
		db.room.statfs = func(string) (int64, error) { return 1 << 40, nil }
		// 600 writes of about 250 bytes stay within the first memtable
		// (1 MiB), and 20 of 2 KiB go to the value log.
		for i := range 600 {
			if err := db.Set(ctx, fmt.Appendf(nil, "mem-%05d", i), value, 0); err != nil {
				t.Fatalf("write %d: %v", i, err)
			}
		}
		for i := range 20 {
			if err := db.Set(ctx, fmt.Appendf(nil, "vlog-%05d", i), bytes.Repeat([]byte("l"), 2<<10), 0); err != nil {
				t.Fatalf("value-log write %d: %v", i, err)
			}
		}
		if err := os.Remove(filler); err != nil {
			t.Fatal(err)
		}
	}
}

// fill writes a file in dir until the file system is full and returns its
// path.
func fill(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 64<<10)
	for {
		if _, err := f.Write(chunk); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			break
		}
	}
	// Sub-chunk leftovers.
	for {
		if _, err := f.Write(chunk[:512]); err != nil {
			break
		}
	}
	if free, err := freeBytes(dir); err != nil || free >= 64<<10 {
		t.Fatalf("the filler left %d bytes free (%v)", free, err)
	}
	return path
}

// mountTmpfs mounts a tmpfs of size bytes on a fresh directory and
// unmounts it when the test ends. It needs root, which CI has: a test
// that cannot mount fails.
func mountTmpfs(t *testing.T, size int64) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "tmpfs")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%d", size), "tmpfs", dir).CombinedOutput()
	if err != nil {
		t.Fatalf("mounting a tmpfs for a full disk needs root (uid %d): %v: %s", os.Getuid(), err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("unmounting %s: %v: %s", dir, err, out)
		}
	})
	return dir
}

// tail returns the last lines of s.
func tail(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(len(lines)-30, 0):], "\n")
}

// BenchmarkSetRoom measures a write with the free-space check (a statfs
// and two stats) and, for comparison, without it.
func BenchmarkSetRoom(b *testing.B) {
	for _, checked := range []bool{true, false} {
		name := "checked"
		if !checked {
			name = "unchecked"
		}
		b.Run(name, func(b *testing.B) {
			db, err := Open(Options{Dir: b.TempDir(), GCInterval: -1})
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			if !checked {
				db.room = nil
			}
			ctx := context.Background()
			value := bytes.Repeat([]byte("v"), 100)
			i := 0
			for b.Loop() {
				i++
				if err := db.Set(ctx, fmt.Appendf(nil, "k%d", i%1000), value, 0); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
