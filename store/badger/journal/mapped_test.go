//go:build linux

package journal

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/caddy-air/caddy-air/internal/crashtest"
)

func openMapped(t *testing.T, dir string, size, prealloc int64, c *clock) *Journal {
	t.Helper()
	j, err := Open(Options{Dir: dir, SegmentSize: size, SegmentAge: time.Hour, Now: c.now, Preallocate: prealloc, Mapped: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	return j
}

// entry is the n-th test entry, of varying length.
func entry(n int) string {
	return fmt.Sprintf("entry %06d %s", n, strings.Repeat("x", n%97))
}

// TestMappedAppendRotateReopen appends through the mapping across
// rotations and growths of the preallocation, and checks that reads see
// every entry at once, and again after reopening, which then appends on.
func TestMappedAppendRotateReopen(t *testing.T) {
	for _, tc := range []struct {
		name           string
		size, prealloc int64
		batch, n       int
	}{
		{"one segment, one growth", 1 << 20, 1 << 20, 1, 200},
		{"growing often", 1 << 20, 4 << 10, 1, 2000},
		{"rotating", 16 << 10, 4 << 10, 3, 3000},
		{"entries larger than a step", 64 << 10, 64, 2, 500},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, c := t.TempDir(), &clock{t0}
			var want []string
			for round := range 3 {
				j := openMapped(t, dir, tc.size, tc.prealloc, c)
				if r := j.Repair(); r.Segment != "" {
					t.Fatalf("round %d: reopening after a clean close repaired %+v", round, r)
				}
				if got := scanAll(t, j, Pos{}, time.Time{}); !slices.Equal(got, want) {
					t.Fatalf("round %d: reopened journal has %d entries, want %d", round, len(got), len(want))
				}
				for i := 0; i < tc.n; i += tc.batch {
					var batch []string
					for k := range tc.batch {
						batch = append(batch, entry(len(want)+k))
					}
					pos, _, err := j.Append(entries(batch...))
					if err != nil {
						t.Fatal(err)
					}
					want = append(want, batch...)
					for k, p := range pos {
						got, err := j.Read(p)
						if err != nil || string(got) != batch[k] {
							t.Fatalf("round %d: Read(%s) right after the append = %q, %v; want %q", round, p, got, err, batch[k])
						}
					}
				}
				if got := scanAll(t, j, Pos{}, time.Time{}); !slices.Equal(got, want) {
					t.Fatalf("round %d: scan has %d entries, want %d", round, len(got), len(want))
				}
				if int64(len(j.m.b)) > j.allocated {
					t.Fatalf("round %d: %d bytes mapped, %d allocated", round, len(j.m.b), j.allocated)
				}
				if err := j.Close(); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// frame is the frame of payload, as Append writes it.
func frame(payload string) []byte {
	b := binary.LittleEndian.AppendUint32(nil, uint32(len(payload)))
	b = binary.LittleEndian.AppendUint32(b, crc32.Checksum([]byte(payload), crcTable))
	return append(b, payload...)
}

// TestMappedTornFrame leaves a frame written in part through the mapping
// after two whole ones, as a process killed during the copy does, and
// checks what Open makes of it: a torn tail is cut off without a
// quarantine, and bytes beyond the torn frame's extent are corruption.
func TestMappedTornFrame(t *testing.T) {
	full := frame("the third entry, torn")
	for _, tc := range []struct {
		name    string
		written []byte // the bytes of the third frame that were written
		after   []byte // bytes 100 past the frame's end
		corrupt bool
	}{
		{"header only", full[:frameHeader], nil, false},
		{"half the length", full[:2], nil, false},
		{"header and half the payload", full[:frameHeader+5], nil, false},
		{"all but the last byte", full[:len(full)-1], nil, false},
		{"payload without its header", append(make([]byte, frameHeader), full[frameHeader:]...), nil, true},
		{"data after the torn frame", full[:frameHeader+3], []byte("stray"), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, c := t.TempDir(), &clock{t0}
			j := openMapped(t, dir, 1<<20, 64<<10, c)
			_, end, err := j.Append(entries("one", "two"))
			if err != nil {
				t.Fatal(err)
			}
			copy(j.m.b[end.Offset:], tc.written)
			if tc.after != nil {
				copy(j.m.b[end.Offset+int64(len(full))+100:], tc.after)
			}
			// Reopened as after a kill: the first journal is not closed.
			j2 := openMapped(t, dir, 1<<20, 64<<10, c)
			r := j2.Repair()
			if r.ValidEnd != end.Offset || r.Cut == 0 {
				t.Fatalf("repair = %+v, want the bytes after %d cut", r, end.Offset)
			}
			if got := r.Quarantined != ""; got != tc.corrupt {
				t.Fatalf("quarantined = %q, want a quarantine: %v", r.Quarantined, tc.corrupt)
			}
			if _, _, err := j2.Append(entries("three")); err != nil {
				t.Fatal(err)
			}
			if got := scanAll(t, j2, Pos{}, time.Time{}); !slices.Equal(got, []string{"one", "two", "three"}) {
				t.Fatalf("entries after the repair: %q", got)
			}
			if e := j2.End(); e.Segment != end.Segment+1 {
				t.Fatalf("the append after a repair went to segment %d, want a new one (%d)", e.Segment, end.Segment+1)
			}
		})
	}
}

// TestMappedReopenDropsZeros checks that Open does not map preallocated
// zeros that it did not write: it cuts them, and the next append writes
// them again.
func TestMappedReopenDropsZeros(t *testing.T) {
	dir, c := t.TempDir(), &clock{t0}
	j := openMapped(t, dir, 1<<20, 64<<10, c)
	_, end, err := j.Append(entries("one"))
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	path := j.path(j.segs[0])
	if fi, _ := os.Stat(path); fi.Size() != 64<<10 {
		t.Fatalf("closed segment of %d bytes, want its preallocation of %d", fi.Size(), 64<<10)
	}
	j = openMapped(t, dir, 1<<20, 64<<10, c)
	if fi, _ := os.Stat(path); fi.Size() != end.Offset {
		t.Fatalf("reopened segment of %d bytes, want its entries' %d", fi.Size(), end.Offset)
	}
	if _, _, err := j.Append(entries("two")); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(path); fi.Size() != end.Offset+64<<10 {
		t.Fatalf("segment of %d bytes after an append, want %d", fi.Size(), end.Offset+64<<10)
	}
	if got := scanAll(t, j, Pos{}, time.Time{}); !slices.Equal(got, []string{"one", "two"}) {
		t.Fatalf("entries: %q", got)
	}
}

// childEnv names the test that a re-executed test binary runs as a child,
// and its directory.
const childEnv = "JOURNAL_TEST_CHILD"

// runChild runs the test binary again, as the child test name in dir.
func runChild(t *testing.T, name, dir string) *exec.Cmd {
	t.Helper()
	return crashtest.Child(t, name, childEnv, dir)
}

// TestMappedKill appends through the mapping in a child process, kills it
// with SIGKILL after a number of appends and reopens the journal: every
// append that returned before the kill is there, in order, and the
// journal needs no quarantine. Each round continues the last one's
// journal.
func TestMappedKill(t *testing.T) {
	dir := t.TempDir()
	total := 0
	for round, killAfter := range []int{50, 1500, 4000, 1} {
		acked := crashtest.KillAfter(t, runChild(t, "TestMappedKillChild", dir), total, killAfter)
		j := openMapped(t, dir, 16<<10, 4<<10, &clock{t0})
		if r := j.Repair(); r.Quarantined != "" {
			t.Fatalf("round %d: reopening after a kill quarantined %+v", round, r)
		}
		got := scanAll(t, j, Pos{}, time.Time{})
		if len(got) < total+acked {
			t.Fatalf("round %d: %d entries after the kill, want at least the %d acknowledged", round, len(got), total+acked)
		}
		for i, e := range got {
			if e != entry(i) {
				t.Fatalf("round %d: entry %d is %q, want %q", round, i, e, entry(i))
			}
		}
		t.Logf("round %d: %d acknowledged, %d found, %d segments", round, acked, len(got)-total, len(j.segs))
		total = len(got)
		if err := j.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestMappedKillChild is TestMappedKill's child: it appends entries until
// it is killed, and writes the number of each to stdout once Append
// returned.
func TestMappedKillChild(t *testing.T) {
	dir := os.Getenv(childEnv)
	if dir == "" {
		return // run by TestMappedKill only
	}
	j := openMapped(t, dir, 16<<10, 4<<10, &clock{t0})
	n := len(scanAll(t, j, Pos{}, time.Time{}))
	for ; ; n++ {
		if _, _, err := j.Append(entries(entry(n))); err != nil {
			t.Fatal(err)
		}
		if err := crashtest.Ack(os.Stdout, n); err != nil {
			t.Fatal(err)
		}
	}
}

// diskFull is what TestMappedDiskFullChild saw.
type diskFull struct {
	Appended  int    // appends that succeeded
	Err       string // the first append's error
	ErrAgain  string // the error of one more append, of 20 KiB
	Mapped    int64  // bytes mapped after the errors
	FileSize  int64  // the segment's size after the errors
	Allocated int64
	Read      int // entries a scan read after the errors
}

// TestMappedDiskFull lets a child process append to a mapped journal
// whose files may not grow past 40 KiB (RLIMIT_FSIZE, as a full disk):
// the append that needs more room fails with an error instead of
// crashing, nothing is mapped beyond the file, and what was appended
// before reads back.
func TestMappedDiskFull(t *testing.T) {
	dir := t.TempDir()
	cmd := runChild(t, "TestMappedDiskFullChild", dir)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the child failed (a crash on a full disk?): %v\n%s", err, out)
	}
	var r diskFull
	i := bytes.Index(out, []byte("\n{"))
	if i < 0 {
		t.Fatalf("no report from the child:\n%s", out)
	}
	if err := json.NewDecoder(bytes.NewReader(out[i+1:])).Decode(&r); err != nil {
		t.Fatalf("reading the child's report: %v\n%s", err, out)
	}
	if r.Appended == 0 || !strings.Contains(r.Err, "preallocating") || !strings.Contains(r.ErrAgain, "preallocating") {
		t.Errorf("appends on a full disk: %d succeeded, then %q and %q; want some, then preallocation errors", r.Appended, r.Err, r.ErrAgain)
	}
	if r.Mapped > r.FileSize || r.FileSize > 40<<10 || r.Allocated != r.FileSize {
		t.Errorf("after the errors: %d bytes mapped, file of %d bytes, %d allocated; want the mapping within the file, within the limit", r.Mapped, r.FileSize, r.Allocated)
	}
	if r.Read != r.Appended {
		t.Errorf("read %d entries back, want the %d appended", r.Read, r.Appended)
	}
	// The parent, without the limit, reads them too.
	j := openMapped(t, dir, 1<<20, 16<<10, &clock{t0})
	if got := scanAll(t, j, Pos{}, time.Time{}); len(got) != r.Appended {
		t.Errorf("reopened: %d entries, want %d", len(got), r.Appended)
	}
}

// TestMappedDiskFullChild is TestMappedDiskFull's child.
func TestMappedDiskFullChild(t *testing.T) {
	dir := os.Getenv(childEnv)
	if dir == "" {
		return // run by TestMappedDiskFull only
	}
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: 40 << 10, Max: 40 << 10}); err != nil {
		t.Fatal(err)
	}
	j := openMapped(t, dir, 1<<20, 16<<10, &clock{t0})
	var r diskFull
	for ; r.Appended < 1<<20; r.Appended++ {
		if _, _, err := j.Append(entries(entry(r.Appended))); err != nil {
			r.Err = err.Error()
			break
		}
	}
	if _, _, err := j.Append(entries(strings.Repeat("more", 5<<10))); err != nil {
		r.ErrAgain = err.Error()
	}
	fi, err := os.Stat(filepath.Join(dir, j.segs[len(j.segs)-1].name()))
	if err != nil {
		t.Fatal(err)
	}
	r.Mapped, r.FileSize, r.Allocated = int64(len(j.m.b)), fi.Size(), j.allocated
	r.Read = len(scanAll(t, j, Pos{}, time.Time{}))
	b, _ := json.Marshal(r)
	fmt.Printf("\n%s\n", b)
}
