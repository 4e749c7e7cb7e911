package journal

import (
	"bufio"
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"time"
)

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
