// Package journal is an append-only log of opaque entries in segment files,
// written with plain write(2) calls (or copied into a shared mapping of
// preallocated zeros, Options.Mapped) and read with plain reads.
//
// It exists for data that is written once, read rarely and in order, and
// expires by age, such as the billing ledger's records. Kept in the
// key-value store, such data passes through memtables, is flushed into
// tables and rewritten by compactions, all of which Badger does in the Go
// heap and in memory-mapped files. A journal costs one buffered write per
// batch and no resident memory: the kernel's page cache holds its pages,
// which do not count towards the process's memory.
//
// Each entry is framed by its length and a CRC-32C of its bytes, so that a
// write torn by a crash is found and cut off when the journal is opened.
// The journal keeps no index: a caller that needs to find entries again
// keeps their positions (Pos) elsewhere, and a caller that keeps derived
// state in another store records there the position up to which that
// state includes the journal (see billing.Ledger).
//
// Append does not sync: it survives a crash of the process, and a caller
// that must survive a crash of the machine calls Sync after it (the ledger
// does, once per batch: group commit). Finished segments are synced when
// the next one starts.
//
// Open repairs the last segment: a torn tail (an entry cut short by a
// crash, followed by nothing or by zeros, or zeros where the machine lost
// unsynced pages) is cut off; a
// corrupt entry followed by more data is not silently dropped: the whole
// segment is first copied aside as <name>.corrupt, and Repair reports it.
// After any repair the next append starts a new segment, so that the
// position of an entry that was cut off never names a different entry.
//
// Damage found later, anywhere (bit rot, a disk error), does not stop
// reads: Scan skips a damaged region up to the next entry whose frame and
// checksum verify, records it (Journal.Damaged) and reports it once
// (Options.OnDamage); Read of an entry in it returns ErrCorrupt, and a
// Read that meets damage first records and reports it as Scan does.
//
// A Journal allows one writer (Append, Truncate) and any number of
// concurrent readers (Scan, Read).
package journal

import (
	"bufio"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Defaults of Options.
const (
	DefaultSegmentSize = 64 << 20
	DefaultSegmentAge  = 24 * time.Hour
)

// MaxEntrySize is the largest entry Append accepts.
const MaxEntrySize = 16 << 20

// frameHeader is the size of an entry's frame header: the entry's length
// and its CRC-32C, both little-endian uint32.
const frameHeader = 8

// segmentExt ends the name of every segment file.
const segmentExt = ".seg"

// segmentTimeLayout is the layout of the creation time in a segment's name.
const segmentTimeLayout = "20060102T150405.000000000Z"

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// ErrCorrupt is returned by Read when an entry's frame or checksum is
// wrong.
var ErrCorrupt = errors.New("journal: corrupt entry")

// ErrNoEntry is returned by Read for a position where no entry is, for
// example in a segment that RemoveBefore deleted.
var ErrNoEntry = errors.New("journal: no entry at this position")

// ErrStop may be returned by a Scan callback to end the scan without an
// error.
var ErrStop = errors.New("journal: stop scan")

// Pos is a position in the journal: a segment's sequence number and a byte
// offset in it. Positions order like the entries they point to.
type Pos struct {
	// Segment is the sequence number of a segment, from 1.
	Segment uint64
	// Offset is a byte offset into the segment.
	Offset int64
}

// Less reports whether p comes before q.
func (p Pos) Less(q Pos) bool {
	return p.Segment < q.Segment || p.Segment == q.Segment && p.Offset < q.Offset
}

// IsZero reports whether p is the zero position, which comes before every
// entry.
func (p Pos) IsZero() bool { return p == Pos{} }

// AppendBinary appends the 16-byte form of p to b.
func (p Pos) AppendBinary(b []byte) ([]byte, error) {
	b = binary.BigEndian.AppendUint64(b, p.Segment)
	return binary.BigEndian.AppendUint64(b, uint64(p.Offset)), nil
}

// UnmarshalBinary reads the 16-byte form of a position.
func (p *Pos) UnmarshalBinary(b []byte) error {
	if len(b) != 16 {
		return fmt.Errorf("journal: position of %d bytes, want 16", len(b))
	}
	p.Segment = binary.BigEndian.Uint64(b)
	p.Offset = int64(binary.BigEndian.Uint64(b[8:]))
	return nil
}

// String shows p as segment:offset.
func (p Pos) String() string { return fmt.Sprintf("%d:%d", p.Segment, p.Offset) }

// Options configures a Journal.
type Options struct {
	// Dir is the directory of the segment files; it is created if missing.
	Dir string
	// OnDamage, if set, is called the first time a scan finds a damaged
	// region (see Scan and Damage), from the scanning goroutine. It must
	// be quick and must not call the Journal.
	OnDamage func(Damage)
	// SegmentSize is the size after which a new segment is started
	// (zero: DefaultSegmentSize).
	SegmentSize int64
	// SegmentAge is the age after which a new segment is started, so that
	// RemoveBefore can free space in steps of at most this age (zero:
	// DefaultSegmentAge).
	SegmentAge time.Duration
	// Now returns the current time (nil: time.Now).
	Now func() time.Time
	// Preallocate, when positive, makes the last segment's file this many
	// bytes longer than its entries, filled with zeros, whenever its
	// entries reach its end: Sync then flushes data blocks alone
	// (fdatasync), without the file system's metadata journal that a file
	// growing on every append costs (as PostgreSQL pre-fills WAL segments).
	// Zeros after the last entry read as the end of the data.
	Preallocate int64
	// Mapped makes Append copy entries into a shared memory mapping of
	// the last segment instead of calling write(2), which saves a system
	// call per append; it needs Preallocate, and maps only preallocated
	// zeros (see mapped_linux.go), so a full disk fails the preallocation
	// as before rather than the copy. The copy survives a crash of the
	// process like a write does; Sync still makes it durable. Ignored
	// where the system offers no such mapping (not Linux).
	Mapped bool
}

// segment is one segment file.
type segment struct {
	seq     uint64
	created time.Time
	size    int64 // bytes of whole entries; only the last segment grows
}

// name is the segment's file name.
func (s segment) name() string {
	return fmt.Sprintf("%016x-%s%s", s.seq, s.created.UTC().Format(segmentTimeLayout), segmentExt)
}

// parseSegmentName parses a segment's file name.
func parseSegmentName(name string) (segment, bool) {
	base, ok := strings.CutSuffix(name, segmentExt)
	if !ok {
		return segment{}, false
	}
	seqHex, ts, ok := strings.Cut(base, "-")
	if !ok {
		return segment{}, false
	}
	seq, err := strconv.ParseUint(seqHex, 16, 64)
	if err != nil || seq == 0 {
		return segment{}, false
	}
	created, err := time.Parse(segmentTimeLayout, ts)
	if err != nil {
		return segment{}, false
	}
	return segment{seq: seq, created: created}, true
}

// Journal is an open journal directory.
type Journal struct {
	opts   Options
	damage damageLog // regions scans could not read

	mu   sync.RWMutex // guards segs and the size of the last one
	segs []segment
	file *os.File // the last segment, open for appending; nil until the first append
	buf  []byte   // the writer's frame buffer, reused

	repair     Repair  // what Open repaired
	rotateNext bool    // the next append starts a new segment
	allocated  int64   // the last segment file's size, zeros after its entries included
	m          mapping // the last segment's mapping, with Options.Mapped
}

// Repair describes what Open cut off the last segment.
type Repair struct {
	// Segment is the file name of the repaired segment; empty when
	// nothing was cut.
	Segment string
	// ValidEnd is the offset of the end of its last intact entry.
	ValidEnd int64
	// Cut is how many bytes after ValidEnd were cut off.
	Cut int64
	// Quarantined is the path of the copy of the whole segment kept
	// aside when the cut bytes were corrupt rather than a torn tail; empty
	// for a torn tail.
	Quarantined string
}

// Repair reports what Open cut off the last segment.
func (j *Journal) Repair() Repair { return j.repair }

// Open opens the journal in opts.Dir, creating the directory if needed.
// If the last segment ends in a torn entry, as after a crash during a
// write, Open cuts it off.
func Open(opts Options) (*Journal, error) {
	if opts.Dir == "" {
		return nil, errors.New("journal: no directory")
	}
	if opts.SegmentSize <= 0 {
		opts.SegmentSize = DefaultSegmentSize
	}
	if opts.SegmentAge <= 0 {
		opts.SegmentAge = DefaultSegmentAge
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Mapped && opts.Preallocate <= 0 {
		return nil, errors.New("journal: a mapped journal needs preallocation")
	}
	opts.Mapped = opts.Mapped && mappingSupported
	if err := os.MkdirAll(opts.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	entries, err := os.ReadDir(opts.Dir)
	if err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	j := &Journal{opts: opts}
	for _, e := range entries {
		if s, ok := parseSegmentName(e.Name()); ok && e.Type().IsRegular() {
			j.segs = append(j.segs, s)
		}
	}
	slices.SortFunc(j.segs, func(a, b segment) int { return cmp.Compare(a.seq, b.seq) })
	for i := range j.segs {
		fi, err := os.Stat(j.path(j.segs[i]))
		if err != nil {
			return nil, fmt.Errorf("journal: %w", err)
		}
		j.segs[i].size = fi.Size()
	}
	if err := j.repairLast(); err != nil {
		return nil, err
	}
	return j, nil
}

// readFrame reads one frame from r into *payload (reusing its memory) and
// returns the frame's size. It returns io.EOF at the end of r, and
// ErrCorrupt or io.ErrUnexpectedEOF for a bad or torn frame.
func readFrame(r *bufio.Reader, payload *[]byte) (int64, error) {
	var hdr [frameHeader]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return 0, err
	}
	n, ok := frameLen(hdr[:])
	if !ok {
		return 0, ErrCorrupt
	}
	if cap(*payload) < n {
		*payload = make([]byte, n)
	}
	*payload = (*payload)[:n]
	if _, err := io.ReadFull(r, *payload); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return 0, err
	}
	if !frameSumOK(hdr[:], *payload) {
		return 0, ErrCorrupt
	}
	return frameHeader + int64(n), nil
}

// frameLen returns the payload length that the frame header hdr states,
// and whether it can be an entry's: appended entries are never empty (a
// zero length is a torn or zeroed tail, or corruption) nor larger than
// MaxEntrySize.
func frameLen(hdr []byte) (int, bool) {
	n := binary.LittleEndian.Uint32(hdr[:4])
	return int(n), n != 0 && n <= MaxEntrySize
}

// frameSumOK reports whether payload has the checksum of frame header hdr.
func frameSumOK(hdr, payload []byte) bool {
	return crc32.Checksum(payload, crcTable) == binary.LittleEndian.Uint32(hdr[4:])
}

// path is the file path of s.
func (j *Journal) path(s segment) string { return filepath.Join(j.opts.Dir, s.name()) }

// End returns the position after the last entry.
func (j *Journal) End() Pos {
	j.mu.RLock()
	defer j.mu.RUnlock()
	return j.endLocked()
}

// endLocked is End with j.mu held.
func (j *Journal) endLocked() Pos {
	if len(j.segs) == 0 {
		return Pos{}
	}
	last := j.segs[len(j.segs)-1]
	return Pos{Segment: last.seq, Offset: last.size}
}

// Append writes entries at the end of the journal, in one write when they
// fit the current segment, and returns the position of each and the end
// after them. On an error nothing is appended: a partial write is cut off
// again. Entries may not be empty.
func (j *Journal) Append(entries [][]byte) (pos []Pos, end Pos, err error) {
	size := int64(0)
	for _, e := range entries {
		if len(e) == 0 || len(e) > MaxEntrySize {
			return nil, Pos{}, fmt.Errorf("journal: entry of %d bytes", len(e))
		}
		size += frameHeader + int64(len(e))
	}
	if err := j.rotateFor(size); err != nil {
		return nil, Pos{}, err
	}
	j.mu.RLock()
	last := j.segs[len(j.segs)-1]
	j.mu.RUnlock()
	pos = make([]Pos, len(entries))
	buf := j.buf[:0]
	off := last.size
	for i, e := range entries {
		pos[i] = Pos{Segment: last.seq, Offset: off}
		buf = binary.LittleEndian.AppendUint32(buf, uint32(len(e)))
		buf = binary.LittleEndian.AppendUint32(buf, crc32.Checksum(e, crcTable))
		buf = append(buf, e...)
		off += frameHeader + int64(len(e))
	}
	if cap(buf) <= 1<<20 {
		j.buf = buf
	}
	if err := j.preallocate(off); err != nil {
		return nil, Pos{}, err
	}
	if err := j.write(buf, last.size); err != nil {
		if terr := j.cut(last.size, off); terr != nil {
			err = errors.Join(err, terr)
		}
		return nil, Pos{}, fmt.Errorf("journal: appending: %w", err)
	}
	j.mu.Lock()
	j.segs[len(j.segs)-1].size = off
	j.mu.Unlock()
	return pos, Pos{Segment: last.seq, Offset: off}, nil
}

// write writes buf, the frames of an append, at offset off of the last
// segment: into its mapping with Options.Mapped, else with one write(2)
// at the file's offset, which is off.
func (j *Journal) write(buf []byte, off int64) error {
	if j.opts.Mapped {
		return j.writeMapped(buf, off)
	}
	_, err := j.file.Write(buf)
	return err
}

// rotateFor starts a new segment if there is none yet, or if the current
// one is not empty and would grow past SegmentSize by size bytes or is
// older than SegmentAge.
func (j *Journal) rotateFor(size int64) error {
	now := j.opts.Now()
	j.mu.RLock()
	n := len(j.segs)
	var last segment
	if n > 0 {
		last = j.segs[n-1]
	}
	j.mu.RUnlock()
	if n > 0 && !j.rotateNext && (last.size == 0 || last.size+size <= j.opts.SegmentSize && now.Sub(last.created) < j.opts.SegmentAge) {
		return nil
	}
	next := segment{seq: last.seq + 1, created: now.UTC()}
	if j.file != nil {
		// The finished segment loses its preallocated zeros (readers take
		// a segment's size for the end of its entries) and is synced, so
		// that a crash loses at most the current one's unsynced tail. This
		// happens before the next segment exists: a crash in between
		// leaves it the last segment, repaired at Open.
		err := j.unmap()
		if j.allocated > last.size {
			err = errors.Join(err, j.file.Truncate(last.size))
		}
		if err = errors.Join(err, j.file.Sync(), j.file.Close()); err != nil {
			return fmt.Errorf("journal: closing a segment: %w", err)
		}
		j.file = nil
	}
	f, err := os.OpenFile(j.path(next), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("journal: starting a segment: %w", err)
	}
	j.file, j.allocated = f, 0
	j.rotateNext = false
	j.mu.Lock()
	j.segs = append(j.segs, next)
	j.mu.Unlock()
	return syncDir(j.opts.Dir)
}

// syncDir makes a directory's new entries durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	return errors.Join(d.Sync(), d.Close())
}

// Truncate removes every entry from to onward, undoing the appends since
// the journal ended at to. to must be in the last segment.
func (j *Journal) Truncate(to Pos) error {
	j.mu.RLock()
	end := j.endLocked()
	j.mu.RUnlock()
	if to == end {
		return nil
	}
	if to.Segment != end.Segment || end.Offset < to.Offset {
		return fmt.Errorf("journal: cannot truncate to %s, the end is %s", to, end)
	}
	return j.cut(to.Offset, end.Offset)
}

// cut removes the last segment's bytes from off up to end: it truncates
// the file, or zeroes them within its preallocated size.
func (j *Journal) cut(off, end int64) error {
	var err error
	if j.allocated > off {
		_, err = j.file.WriteAt(make([]byte, min(end, j.allocated)-off), off)
	} else {
		err = j.file.Truncate(off)
	}
	if err != nil {
		return fmt.Errorf("journal: truncating: %w", err)
	}
	if _, err := j.file.Seek(off, io.SeekStart); err != nil {
		return fmt.Errorf("journal: truncating: %w", err)
	}
	j.mu.Lock()
	j.segs[len(j.segs)-1].size = off
	j.mu.Unlock()
	return nil
}

// Sync flushes the last segment to disk: its data alone (fdatasync) while
// its entries stay within its preallocated size, everything otherwise.
func (j *Journal) Sync() error {
	if j.file == nil {
		return nil
	}
	if j.opts.Preallocate > 0 {
		return fdatasync(j.file)
	}
	return j.file.Sync()
}

// preallocate makes sure that the last segment's file is long enough for
// entries up to end, extending it by whole Preallocate steps of zeros,
// synced with its new size, before they are written.
func (j *Journal) preallocate(end int64) error {
	if j.opts.Preallocate <= 0 || end <= j.allocated {
		return nil
	}
	size := j.allocated
	for size < end {
		size += j.opts.Preallocate
	}
	zero := make([]byte, 64<<10)
	for off := j.allocated; off < size; off += int64(len(zero)) {
		n := min(int64(len(zero)), size-off)
		if _, err := j.file.WriteAt(zero[:n], off); err != nil {
			_ = j.file.Truncate(j.allocated)
			return fmt.Errorf("journal: preallocating: %w", err)
		}
	}
	if err := j.file.Sync(); err != nil {
		return fmt.Errorf("journal: preallocating: %w", err)
	}
	j.allocated = size
	return nil
}

// Close syncs and closes the journal.
func (j *Journal) Close() error {
	if j.file == nil {
		return nil
	}
	err := errors.Join(j.unmap(), j.file.Sync(), j.file.Close())
	j.file = nil
	return err
}

// Scan calls fn with the position and bytes of every entry from from
// (inclusive) up to to (exclusive), in order; a zero to scans to the end
// of the journal as it is when Scan starts. Segments whose every entry was
// appended before appendedSince are skipped without being read (zero: none
// are skipped). entry is valid only during the call. fn may return
// ErrStop.
//
// Scan does not fail on a damaged entry (a wrong frame or checksum, as bit
// rot or a disk error leave): it skips the entry and what follows it up
// to the next entry it can find again (see Damage), records the region
// (Damaged) and reports it once through Options.OnDamage, and goes on, so
// that one bad sector costs the entries in it and not every scan of a
// range that covers it. Read of an entry in such a region returns
// ErrCorrupt.
func (j *Journal) Scan(from, to Pos, appendedSince time.Time, fn func(pos Pos, entry []byte) error) error {
	j.mu.RLock()
	segs := slices.Clone(j.segs)
	if to.IsZero() {
		to = j.endLocked()
	}
	j.mu.RUnlock()
	var payload []byte
	for i, s := range segs {
		if s.seq < from.Segment || s.seq > to.Segment {
			continue
		}
		// Segment i holds only entries appended before segment i+1 was
		// started.
		if i+1 < len(segs) && !appendedSince.IsZero() && !segs[i+1].created.After(appendedSince) {
			continue
		}
		start := int64(0)
		if s.seq == from.Segment {
			start = from.Offset
		}
		limit := s.size
		if s.seq == to.Segment {
			limit = to.Offset
		}
		if err := j.scanSegment(s, start, limit, &payload, fn); err != nil {
			if errors.Is(err, ErrStop) {
				return nil
			}
			return err
		}
	}
	return nil
}

// scanSegment calls fn for the entries of s between the offsets start and
// limit.
func (j *Journal) scanSegment(s segment, start, limit int64, payload *[]byte, fn func(Pos, []byte) error) error {
	if start >= limit {
		return nil
	}
	f, err := os.Open(j.path(s))
	if errors.Is(err, os.ErrNotExist) {
		return nil // removed by RemoveBefore meanwhile
	}
	if err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	defer f.Close()
	r := bufio.NewReaderSize(io.NewSectionReader(f, start, limit-start), 64<<10)
	off := start
	for off < limit {
		n, err := readFrame(r, payload)
		if err != nil {
			// A damaged region: skipped, recorded and reported once.
			if off = j.damaged(f, s, off, err); off < limit {
				r.Reset(io.NewSectionReader(f, off, limit-off))
			}
			continue
		}
		if err := fn(Pos{Segment: s.seq, Offset: off}, *payload); err != nil {
			return err
		}
		off += n
	}
	return nil
}

// Read returns a copy of the entry at pos.
func (j *Journal) Read(pos Pos) ([]byte, error) {
	j.mu.RLock()
	i, found := slices.BinarySearchFunc(j.segs, pos.Segment, func(s segment, seq uint64) int { return cmp.Compare(s.seq, seq) })
	var s segment
	if found {
		s = j.segs[i]
	}
	j.mu.RUnlock()
	if !found || pos.Offset < 0 || pos.Offset+frameHeader > s.size {
		return nil, fmt.Errorf("%w: %s", ErrNoEntry, pos)
	}
	f, err := os.Open(j.path(s))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s", ErrNoEntry, pos)
	}
	if err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	defer f.Close()
	var payload []byte
	if _, err := readFrame(bufio.NewReader(io.NewSectionReader(f, pos.Offset, s.size-pos.Offset)), &payload); err != nil {
		// Found by a read as by a scan: the region is recorded and
		// reported once.
		j.damaged(f, s, pos.Offset, err)
		return nil, fmt.Errorf("%w at %s: %v", ErrCorrupt, pos, err)
	}
	return payload, nil
}

// RemoveBefore deletes the segments whose every entry was appended before
// t, except the last segment, and returns how many it deleted.
func (j *Journal) RemoveBefore(t time.Time) (int, error) {
	j.mu.Lock()
	n := 0
	for n+1 < len(j.segs) && !j.segs[n+1].created.After(t) {
		n++
	}
	return j.removeFirst(n)
}

// RemoveThrough deletes the segments up to and including the one with
// sequence number seq, except the last segment, and returns how many it
// deleted.
func (j *Journal) RemoveThrough(seq uint64) (int, error) {
	j.mu.Lock()
	n := 0
	for n+1 < len(j.segs) && j.segs[n].seq <= seq {
		n++
	}
	return j.removeFirst(n)
}

// removeFirst deletes the first n segments; j.mu must be held, and is
// released.
func (j *Journal) removeFirst(n int) (int, error) {
	gone := slices.Clone(j.segs[:n])
	j.segs = slices.Delete(j.segs, 0, n)
	j.mu.Unlock()
	var errs []error
	if n > 0 {
		j.damage.forget(gone[n-1].seq)
	}
	for _, s := range gone {
		if err := os.Remove(j.path(s)); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return n, errors.Join(errs...)
}
