package journal

import (
	"cmp"
	"fmt"
	"io"
	"os"
	"slices"
	"sync"
)

// Damage is a region of a segment that Scan could not read and skipped:
// an entry whose frame or checksum is wrong (bit rot, a disk error), and
// whatever follows it up to the next entry that could be found again.
type Damage struct {
	// Segment is the file name of the damaged segment.
	Segment string
	// Seq is the segment's sequence number.
	Seq uint64
	// Offset is where the first unreadable entry starts.
	Offset int64
	// Resumed is where reading went on: the next entry whose frame and
	// checksum verify, followed by another that does or by the segment's
	// end; the segment's end when none was found.
	Resumed int64
	// Reason says what was wrong with the entry at Offset.
	Reason string
}

// Bytes is the size of the region: the bytes that could not be read.
func (d Damage) Bytes() int64 { return d.Resumed - d.Offset }

// Contains reports whether pos is in the damaged region.
func (d Damage) Contains(pos Pos) bool {
	return pos.Segment == d.Seq && pos.Offset >= d.Offset && pos.Offset < d.Resumed
}

// damageLog holds the damaged regions found so far, and tells
// Options.OnDamage of each once.
type damageLog struct {
	mu      sync.Mutex
	regions []Damage // in position order
}

// find returns the known region of segment seq that contains off.
func (l *damageLog) find(seq uint64, off int64) (Damage, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, d := range l.regions {
		if d.Contains(Pos{Segment: seq, Offset: off}) {
			return d, true
		}
	}
	return Damage{}, false
}

// add records d and reports whether it was new (another scan may have
// found it meanwhile). A region that d contains goes: a read of an entry
// inside a region finds only its end, a scan later finds its start.
func (l *damageLog) add(d Damage) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, o := range l.regions {
		if o.Seq == d.Seq && o.Offset == d.Offset {
			return false
		}
	}
	l.regions = slices.DeleteFunc(l.regions, func(o Damage) bool {
		return o.Seq == d.Seq && d.Offset < o.Offset && o.Resumed <= d.Resumed
	})
	l.regions = append(l.regions, d)
	slices.SortFunc(l.regions, func(a, b Damage) int {
		return cmp.Or(cmp.Compare(a.Seq, b.Seq), cmp.Compare(a.Offset, b.Offset))
	})
	return true
}

// forget drops the regions of segments up to and including seq.
func (l *damageLog) forget(seq uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.regions = slices.DeleteFunc(l.regions, func(d Damage) bool { return d.Seq <= seq })
}

// Damaged returns the damaged regions that scans and reads found so far
// in the segments that still exist, in position order. Reads of their entries
// fail with ErrCorrupt; the rest of the journal reads as before.
func (j *Journal) Damaged() []Damage {
	j.damage.mu.Lock()
	defer j.damage.mu.Unlock()
	return slices.Clone(j.damage.regions)
}

// damaged handles an unreadable entry at off in s, found by a scan or a
// read: it finds where reading can go on (once per region and process),
// records and reports the region, and returns that offset.
func (j *Journal) damaged(f *os.File, s segment, off int64, cause error) int64 {
	if d, ok := j.damage.find(s.seq, off); ok {
		return d.Resumed
	}
	d := Damage{Segment: s.name(), Seq: s.seq, Offset: off, Resumed: resync(f, off, s.size), Reason: cause.Error()}
	if j.damage.add(d) && j.opts.OnDamage != nil {
		j.opts.OnDamage(d)
	}
	return d.Resumed
}

// resync returns the offset of the first entry after off, in the first
// size bytes of f, whose frame and checksum verify and that is followed by
// another such entry or by the end: where reading can go on after a
// corrupt entry at off. It returns size when there is none.
//
// A frame found this way is an entry the journal wrote, not bytes inside
// one that happen to look like a frame, unless two CRC-32Cs of bytes that
// are not frames both verify (one chance in 2^64), and unless an entry
// holds journal frames itself, which the ledger's records do not. The
// search reads the rest of the segment into memory, once per damaged
// region and process (see Journal.damaged).
func resync(f *os.File, off, size int64) int64 {
	if off+1 >= size {
		return size
	}
	rest := make([]byte, size-off-1)
	if _, err := io.ReadFull(io.NewSectionReader(f, off+1, int64(len(rest))), rest); err != nil {
		return size
	}
	for p := 0; p+frameHeader <= len(rest); p++ {
		n, ok := frameAt(rest, p)
		if !ok {
			continue
		}
		next := p + n
		if next == len(rest) {
			return off + 1 + int64(p)
		}
		if _, ok := frameAt(rest, next); ok {
			return off + 1 + int64(p)
		}
	}
	return size
}

// frameAt reports whether b holds a whole frame at p whose checksum
// verifies, and returns its size.
func frameAt(b []byte, p int) (int, bool) {
	if p+frameHeader > len(b) {
		return 0, false
	}
	n, ok := frameLen(b[p:])
	if !ok || n > len(b)-p-frameHeader {
		return 0, false
	}
	return frameHeader + n, frameSumOK(b[p:], b[p+frameHeader:p+frameHeader+n])
}

// String describes d for logs.
func (d Damage) String() string {
	return fmt.Sprintf("%s: bytes %d to %d unreadable (%s)", d.Segment, d.Offset, d.Resumed, d.Reason)
}
