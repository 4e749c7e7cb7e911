package journal

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// clock is a settable time source.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

var t0 = time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)

func open(t *testing.T, dir string, size int64, c *clock) *Journal {
	t.Helper()
	j, err := Open(Options{Dir: dir, SegmentSize: size, SegmentAge: time.Hour, Now: c.now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	return j
}

func entries(names ...string) [][]byte {
	out := make([][]byte, len(names))
	for i, n := range names {
		out[i] = []byte(n)
	}
	return out
}

// scanAll returns the entries from from to the end, as strings.
func scanAll(t *testing.T, j *Journal, from Pos, appendedSince time.Time) []string {
	t.Helper()
	var got []string
	err := j.Scan(from, Pos{}, appendedSince, func(_ Pos, e []byte) error {
		got = append(got, string(e))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func TestAppendScanRead(t *testing.T) {
	c := &clock{t0}
	dir := t.TempDir()
	j := open(t, dir, 0, c)
	if !j.End().IsZero() {
		t.Fatalf("empty journal ends at %s", j.End())
	}
	pos, end, err := j.Append(entries("alpha", "beta"))
	if err != nil {
		t.Fatal(err)
	}
	pos2, end2, err := j.Append(entries("gamma"))
	if err != nil {
		t.Fatal(err)
	}
	if !pos[0].Less(pos[1]) || !pos[1].Less(end) || end != pos2[0] || !pos2[0].Less(end2) || end2 != j.End() {
		t.Errorf("positions out of order: %v %v %v %v", pos, end, pos2, end2)
	}
	if got := scanAll(t, j, Pos{}, time.Time{}); !slices.Equal(got, []string{"alpha", "beta", "gamma"}) {
		t.Errorf("scan = %q", got)
	}
	if got := scanAll(t, j, pos[1], time.Time{}); !slices.Equal(got, []string{"beta", "gamma"}) {
		t.Errorf("scan from beta = %q", got)
	}
	for i, want := range []string{"alpha", "beta"} {
		if e, err := j.Read(pos[i]); err != nil || string(e) != want {
			t.Errorf("Read(%s) = %q, %v; want %q", pos[i], e, err, want)
		}
	}
	if _, err := j.Read(end2); !errors.Is(err, ErrNoEntry) {
		t.Errorf("Read at the end: %v", err)
	}

	// Scanning up to a position stops before it; ErrStop stops early.
	var got []string
	if err := j.Scan(Pos{}, pos[1], time.Time{}, func(_ Pos, e []byte) error { got = append(got, string(e)); return nil }); err != nil || !slices.Equal(got, []string{"alpha"}) {
		t.Errorf("scan to beta = %q, %v", got, err)
	}
	calls := 0
	if err := j.Scan(Pos{}, Pos{}, time.Time{}, func(Pos, []byte) error { calls++; return ErrStop }); err != nil || calls != 1 {
		t.Errorf("ErrStop: %d calls, %v", calls, err)
	}

	// Everything is there after reopening.
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	j = open(t, dir, 0, c)
	if got := scanAll(t, j, Pos{}, time.Time{}); !slices.Equal(got, []string{"alpha", "beta", "gamma"}) || j.End() != end2 {
		t.Errorf("after reopening: %q, end %s", got, j.End())
	}
}

func TestAppendRejects(t *testing.T) {
	j := open(t, t.TempDir(), 0, &clock{t0})
	for _, e := range [][]byte{{}, make([]byte, MaxEntrySize+1)} {
		if _, _, err := j.Append([][]byte{[]byte("ok"), e}); err == nil {
			t.Errorf("entry of %d bytes accepted", len(e))
		}
	}
	if !j.End().IsZero() {
		t.Errorf("a rejected batch wrote something: end %s", j.End())
	}
}

func TestTruncateUndoesAppend(t *testing.T) {
	j := open(t, t.TempDir(), 0, &clock{t0})
	_, mid, err := j.Append(entries("kept"))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := j.Append(entries("undone", "undone too")); err != nil {
		t.Fatal(err)
	}
	if err := j.Truncate(mid); err != nil {
		t.Fatal(err)
	}
	if _, _, err := j.Append(entries("next")); err != nil {
		t.Fatal(err)
	}
	if got := scanAll(t, j, Pos{}, time.Time{}); !slices.Equal(got, []string{"kept", "next"}) {
		t.Errorf("after truncate: %q", got)
	}
	if err := j.Truncate(Pos{Segment: 9, Offset: 0}); err == nil {
		t.Errorf("truncating to another segment succeeded")
	}
}

// TestOpenCutsTornTail checks that a write torn by a crash is cut off and
// that appends continue after the last whole entry.
func TestOpenCutsTornTail(t *testing.T) {
	for _, tc := range []struct {
		name string
		tail []byte
	}{
		{"half a header", []byte{5, 0, 0}},
		{"header without payload", []byte{5, 0, 0, 0, 1, 2, 3, 4, 'a'}},
		{"bad checksum", []byte{1, 0, 0, 0, 1, 2, 3, 4, 'a'}},
		{"zeroed pages", make([]byte, 4096)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			c := &clock{t0}
			j := open(t, dir, 0, c)
			_, end, err := j.Append(entries("whole"))
			if err != nil {
				t.Fatal(err)
			}
			j.Close()
			name := filepath.Join(dir, segment{seq: 1, created: t0}.name())
			f, err := os.OpenFile(name, os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			f.Write(tc.tail)
			f.Close()

			j = open(t, dir, 0, c)
			if j.End() != end {
				t.Errorf("end %s after reopening, want %s", j.End(), end)
			}
			if r := j.Repair(); r.Cut != int64(len(tc.tail)) || r.Quarantined != "" {
				t.Errorf("repair %+v, want %d bytes cut and nothing quarantined", r, len(tc.tail))
			}
			pos, _, err := j.Append(entries("after"))
			if err != nil {
				t.Fatal(err)
			}
			// The cut-off entry's position is never reused.
			if pos[0].Segment != 2 || pos[0].Offset != 0 {
				t.Errorf("entry after a repair at %s, want the start of a new segment", pos[0])
			}
			if got := scanAll(t, j, Pos{}, time.Time{}); !slices.Equal(got, []string{"whole", "after"}) {
				t.Errorf("entries %q", got)
			}
		})
	}
}

// TestOpenQuarantinesCorruption checks that a corrupt entry followed by
// more data is not silently dropped: the segment is copied aside whole
// before the journal is cut back to its last intact entry.
func TestOpenQuarantinesCorruption(t *testing.T) {
	dir := t.TempDir()
	c := &clock{t0}
	j := open(t, dir, 0, c)
	if _, _, err := j.Append(entries("first", "second", "third")); err != nil {
		t.Fatal(err)
	}
	j.Close()
	name := filepath.Join(dir, segment{seq: 1, created: t0}.name())
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	second := frameHeader + len("first")
	b[second+frameHeader] ^= 0xff // first byte of "second"
	if err := os.WriteFile(name, b, 0o600); err != nil {
		t.Fatal(err)
	}

	j = open(t, dir, 0, c)
	r := j.Repair()
	if r.ValidEnd != int64(second) || r.Quarantined != name+".corrupt" {
		t.Fatalf("repair %+v, want a cut at %d and a quarantined copy", r, second)
	}
	kept, err := os.ReadFile(r.Quarantined)
	if err != nil || !slices.Equal(kept, b) {
		t.Errorf("quarantined copy differs from the corrupt segment (err %v)", err)
	}
	if got := scanAll(t, j, Pos{}, time.Time{}); !slices.Equal(got, []string{"first"}) {
		t.Errorf("entries %q", got)
	}
	// A quarantined copy is not a segment.
	j.Close()
	j = open(t, dir, 0, c)
	if got := scanAll(t, j, Pos{}, time.Time{}); !slices.Equal(got, []string{"first"}) {
		t.Errorf("entries after reopening %q", got)
	}
}

// TestRemoveThrough checks that whole segments up to a sequence number go,
// never the last one.
func TestRemoveThrough(t *testing.T) {
	dir := t.TempDir()
	c := &clock{t0}
	j := open(t, dir, 1, c) // every append starts a segment
	for _, e := range []string{"a", "b", "c"} {
		if _, _, err := j.Append(entries(e)); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := j.RemoveThrough(1); n != 1 || err != nil {
		t.Fatalf("RemoveThrough(1) = %d, %v", n, err)
	}
	if got := scanAll(t, j, Pos{}, time.Time{}); !slices.Equal(got, []string{"b", "c"}) {
		t.Errorf("entries %q", got)
	}
	if n, _ := j.RemoveThrough(99); n != 1 {
		t.Errorf("RemoveThrough(99) removed %d segments, want 1 (the last stays)", n)
	}
	if got := scanAll(t, j, Pos{}, time.Time{}); !slices.Equal(got, []string{"c"}) {
		t.Errorf("entries %q", got)
	}
}

// TestSegments checks rotation by size and by age, skipping old segments
// in Scan and removing them with RemoveBefore.
func TestSegments(t *testing.T) {
	c := &clock{t0}
	dir := t.TempDir()
	// Each entry takes 8+4 bytes: two fit a segment of 24.
	j := open(t, dir, 24, c)
	for i := range 5 {
		if _, _, err := j.Append(entries(fmt.Sprintf("e%03d", i))); err != nil {
			t.Fatal(err)
		}
		c.t = c.t.Add(time.Minute)
	}
	// e000 e001 | e002 e003 | e004, started at t0, t0+2m and t0+4m.
	if n := len(j.segs); n != 3 {
		t.Fatalf("%d segments, want 3", n)
	}
	// The age starts a segment too.
	c.t = c.t.Add(2 * time.Hour)
	if _, _, err := j.Append(entries("late")); err != nil {
		t.Fatal(err)
	}
	if n := len(j.segs); n != 4 {
		t.Fatalf("%d segments after an hour, want 4", n)
	}

	for _, tc := range []struct {
		since time.Time
		want  []string
	}{
		{time.Time{}, []string{"e000", "e001", "e002", "e003", "e004", "late"}},
		{t0.Add(90 * time.Second), []string{"e000", "e001", "e002", "e003", "e004", "late"}},
		{t0.Add(2 * time.Minute), []string{"e002", "e003", "e004", "late"}},
		{t0.Add(5 * time.Minute), []string{"e004", "late"}},
		{c.t.Add(time.Hour), []string{"late"}},
	} {
		if got := scanAll(t, j, Pos{}, tc.since); !slices.Equal(got, tc.want) {
			t.Errorf("scan appended since %s: %q, want %q", tc.since.Format(time.TimeOnly), got, tc.want)
		}
	}

	n, err := j.RemoveBefore(t0.Add(3 * time.Minute))
	if err != nil || n != 1 {
		t.Fatalf("RemoveBefore = %d, %v; want 1", n, err)
	}
	if got := scanAll(t, j, Pos{}, time.Time{}); !slices.Equal(got, []string{"e002", "e003", "e004", "late"}) {
		t.Errorf("after removing: %q", got)
	}
	// The last segment stays, however old.
	if n, err := j.RemoveBefore(c.t.Add(48 * time.Hour)); err != nil || n != 2 {
		t.Fatalf("RemoveBefore(all) = %d, %v; want 2", n, err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*"+segmentExt))
	if len(files) != 1 {
		t.Errorf("files left: %q", files)
	}

	// Reopening finds the segments and their order.
	j.Close()
	j = open(t, dir, 24, c)
	if got := scanAll(t, j, Pos{}, time.Time{}); !slices.Equal(got, []string{"late"}) || j.End().Segment != 4 {
		t.Errorf("after reopening: %q, end %s", got, j.End())
	}
}

func TestPosBinary(t *testing.T) {
	for _, p := range []Pos{{}, {1, 0}, {1 << 40, 1<<62 + 3}} {
		b, _ := p.AppendBinary(nil)
		var q Pos
		if err := q.UnmarshalBinary(b); err != nil || q != p {
			t.Errorf("round trip of %s: %s, %v", p, q, err)
		}
	}
	var q Pos
	if err := q.UnmarshalBinary([]byte{1, 2}); err == nil {
		t.Errorf("short position accepted")
	}
	if !(Pos{1, 9}).Less(Pos{2, 0}) || (Pos{2, 0}).Less(Pos{1, 9}) || (Pos{1, 1}).Less(Pos{1, 1}) {
		t.Errorf("Less is wrong")
	}
}

// TestPreallocate checks that a preallocated segment reads, reopens,
// truncates and rotates like any other: the zeros after its entries are
// neither entries nor a repair, and a finished segment loses them.
func TestPreallocate(t *testing.T) {
	dir := t.TempDir()
	c := &clock{t0}
	o := Options{Dir: dir, SegmentSize: 1 << 20, SegmentAge: time.Hour, Now: c.now, Preallocate: 64 << 10}
	j, err := Open(o)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := j.Append(entries("first", "second")); err != nil {
		t.Fatal(err)
	}
	start := j.End()
	if _, _, err := j.Append(entries("undone")); err != nil {
		t.Fatal(err)
	}
	if err := j.Truncate(start); err != nil {
		t.Fatal(err)
	}
	if err := j.Sync(); err != nil {
		t.Fatal(err)
	}
	name := filepath.Join(dir, segment{seq: 1, created: t0}.name())
	if fi, _ := os.Stat(name); fi.Size() != 64<<10 {
		t.Errorf("segment file of %d bytes, want the 64 KiB step", fi.Size())
	}
	j.Close()

	j, err = Open(o)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	if r := j.Repair(); r != (Repair{}) || j.End() != start {
		t.Errorf("reopened at %s with repair %+v, want %s and none", j.End(), r, start)
	}
	pos, _, err := j.Append(entries("third", string(make([]byte, 100<<10))))
	if err != nil {
		t.Fatal(err)
	}
	if pos[0] != start {
		t.Errorf("appended at %s, want %s: the zeros are free space", pos[0], start)
	}
	if got := scanAll(t, j, Pos{}, time.Time{}); len(got) != 4 || got[2] != "third" {
		t.Fatalf("%d entries: %q", len(got), got[:min(len(got), 3)])
	}
	c.t = c.t.Add(2 * time.Hour) // the next append starts a segment
	if _, _, err := j.Append(entries("next")); err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(name)
	if end := pos[1].Offset + frameHeader + 100<<10; fi.Size() != end {
		t.Errorf("finished segment of %d bytes, want %d (its entries, no zeros)", fi.Size(), end)
	}
	if got := scanAll(t, j, Pos{}, time.Time{}); len(got) != 5 || got[4] != "next" {
		t.Errorf("%d entries after rotation", len(got))
	}
}
