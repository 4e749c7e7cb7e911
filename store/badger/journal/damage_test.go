package journal

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// threeSegments writes a journal of three segments of three entries each
// and returns it with the entries' positions.
func threeSegments(t *testing.T, dir string, onDamage func(Damage)) (*Journal, [][]Pos) {
	t.Helper()
	c := &clock{t0}
	j, err := Open(Options{Dir: dir, SegmentAge: time.Hour, Now: c.now, OnDamage: onDamage})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	var pos [][]Pos
	for _, seg := range [][]string{{"a1", "a2", "a3"}, {"b1-longer", "b2-longer", "b3-longer"}, {"c1", "c2", "c3"}} {
		p, _, err := j.Append(entries(seg...))
		if err != nil {
			t.Fatal(err)
		}
		pos = append(pos, p)
		c.t = c.t.Add(2 * time.Hour)
	}
	if n := len(j.segs); n != 3 {
		t.Fatalf("%d segments, want 3", n)
	}
	return j, pos
}

// damage rewrites bytes of the segment with sequence number seq.
func damage(t *testing.T, j *Journal, seq uint64, edit func(b []byte)) {
	t.Helper()
	name := j.path(j.segs[seq-1])
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	edit(b)
	if err := os.WriteFile(name, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestScanSkipsDamage flips bytes in the middle one of three segments:
// Scan returns every entry it can still find, records and reports the
// damaged region once, and does not fail; Read of a lost entry fails.
func TestScanSkipsDamage(t *testing.T) {
	const entry int64 = frameHeader + int64(len("b1-longer")) // entries of segment 2
	all := []string{"a1", "a2", "a3", "b1-longer", "b2-longer", "b3-longer", "c1", "c2", "c3"}
	for _, tc := range []struct {
		name       string
		edit       func(b []byte)
		lost       []string
		start, end int64 // the damaged region
	}{
		{name: "payload of the middle entry", edit: func(b []byte) { b[entry+frameHeader+1] ^= 0x01 },
			lost: []string{"b2-longer"}, start: entry, end: 2 * entry},
		{name: "checksum of the first entry", edit: func(b []byte) { b[4] ^= 0x80 },
			lost: []string{"b1-longer"}, start: 0, end: entry},
		{name: "length too large", edit: func(b []byte) { b[3] = 0xff },
			lost: []string{"b1-longer"}, start: 0, end: entry},
		{name: "length off by one", edit: func(b []byte) { binary.LittleEndian.PutUint32(b[entry:], uint32(entry-frameHeader+1)) },
			lost: []string{"b2-longer"}, start: entry, end: 2 * entry},
		{name: "zero length", edit: func(b []byte) { clear(b[entry : entry+4]) },
			lost: []string{"b2-longer"}, start: entry, end: 2 * entry},
		{name: "last entry", edit: func(b []byte) { b[len(b)-1] ^= 0x01 },
			lost: []string{"b3-longer"}, start: 2 * entry, end: 3 * entry},
		{name: "everything after the first entry", edit: func(b []byte) {
			for i := int(entry) + 2; i < len(b); i++ {
				b[i] = 0xa5
			}
		}, lost: []string{"b2-longer", "b3-longer"}, start: entry, end: 3 * entry},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var reported []Damage
			j, pos := threeSegments(t, t.TempDir(), func(d Damage) { reported = append(reported, d) })
			damage(t, j, 2, tc.edit)

			want := slices.DeleteFunc(slices.Clone(all), func(e string) bool { return slices.Contains(tc.lost, e) })
			for range 2 { // the second scan finds the known region
				if got := scanAll(t, j, Pos{}, time.Time{}); !slices.Equal(got, want) {
					t.Fatalf("scan: %q, want %q", got, want)
				}
			}
			// A scan from inside the region, as from a lost entry's
			// position, skips to where the region ends.
			for _, p := range pos[1] {
				if d := (Damage{Seq: 2, Offset: tc.start, Resumed: tc.end}); d.Contains(p) {
					got := scanAll(t, j, p, time.Time{})
					if want := all[len(all)-len(got):]; len(got) == 0 || !slices.Equal(got, want) || slices.Contains(got, tc.lost[0]) {
						t.Errorf("scan from %s: %q", p, got)
					}
				}
			}
			if len(reported) != 1 {
				t.Fatalf("reported %d regions, want 1: %v", len(reported), reported)
			}
			d := reported[0]
			if d.Seq != 2 || d.Segment != j.segs[1].name() || d.Offset != tc.start || d.Resumed != tc.end || d.Reason == "" {
				t.Errorf("reported %+v, want segment 2 from %d to %d", d, tc.start, tc.end)
			}
			if got := j.Damaged(); !slices.Equal(got, reported) {
				t.Errorf("Damaged() = %v, want %v", got, reported)
			}
			for i, p := range pos[1] {
				_, err := j.Read(p)
				if lost := slices.Contains(tc.lost, all[3+i]); lost != errors.Is(err, ErrCorrupt) {
					t.Errorf("Read(%s) of %s: %v", p, all[3+i], err)
				}
			}
		})
	}
}

// TestRemovedDamageIsForgotten checks that deleting a damaged segment
// drops its region from Damaged.
func TestRemovedDamageIsForgotten(t *testing.T) {
	j, _ := threeSegments(t, t.TempDir(), nil)
	damage(t, j, 2, func(b []byte) { b[frameHeader] ^= 0x01 })
	scanAll(t, j, Pos{}, time.Time{})
	if n := len(j.Damaged()); n != 1 {
		t.Fatalf("%d damaged regions, want 1", n)
	}
	if _, err := j.RemoveThrough(2); err != nil {
		t.Fatal(err)
	}
	if d := j.Damaged(); len(d) != 0 {
		t.Errorf("Damaged() after removing the segment: %v", d)
	}
	if _, err := os.Stat(filepath.Join(j.opts.Dir, j.segs[0].name())); err != nil {
		t.Error(err)
	}
}

// TestReadRecordsDamage checks that a Read that meets damage before any
// scan records and reports its region once, and that a scan finding the
// region's start later replaces the part the Read saw: one region, told
// twice at most, never counted twice.
func TestReadRecordsDamage(t *testing.T) {
	var reported []Damage
	j, pos := threeSegments(t, t.TempDir(), func(d Damage) { reported = append(reported, d) })
	damage(t, j, 2, func(b []byte) {
		for i := frameHeader + 2; i < len(b); i++ { // all but the first entry's header
			b[i] = 0xa5
		}
	})
	for range 2 {
		if _, err := j.Read(pos[1][2]); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("Read of a damaged entry: %v", err)
		}
	}
	if len(reported) != 1 || reported[0].Offset != pos[1][2].Offset {
		t.Fatalf("after two reads: reported %v, want the region from the read entry", reported)
	}
	if got := j.Damaged(); len(got) != 1 || got[0].Offset != pos[1][2].Offset || got[0].Resumed != j.segs[1].size {
		t.Fatalf("Damaged() after the reads = %v", got)
	}
	scanAll(t, j, Pos{}, time.Time{})
	got := j.Damaged()
	if len(got) != 1 || got[0].Offset != 0 || got[0].Resumed != j.segs[1].size {
		t.Errorf("Damaged() after a scan = %v, want the whole segment once", got)
	}
	if len(reported) > 2 {
		t.Errorf("reported %d times: %v", len(reported), reported)
	}
}
