package journal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"slices"
)

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
		if err = errors.Join(err, j.file.Sync(), j.retire(j.file)); err != nil {
			return fmt.Errorf("journal: closing a segment: %w", err)
		}
	}
	f, err := os.OpenFile(j.path(next), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("journal: starting a segment: %w", err)
	}
	j.fileMu.Lock()
	j.file = f
	j.fileMu.Unlock()
	j.allocated = 0
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
// Every entry appended before Sync was called is durable when it returns
// nil (a segment finished meanwhile was synced when the next one
// started).
//
// Sync may run concurrently with Append, Truncate and Close, from another
// goroutine: it holds no lock of the writer's while the disk works, so
// the writer appends on during a sync. A segment finished during a Sync
// is closed when that Sync ends.
func (j *Journal) Sync() error {
	j.fileMu.Lock()
	f := j.file
	if f == nil {
		j.fileMu.Unlock()
		return nil
	}
	if j.syncing == nil {
		j.syncing = map[*os.File]int{}
	}
	j.syncing[f]++
	j.fileMu.Unlock()
	var err error
	if j.opts.Preallocate > 0 {
		err = fdatasync(f)
	} else {
		err = f.Sync()
	}
	j.fileMu.Lock()
	defer j.fileMu.Unlock()
	if j.syncing[f]--; j.syncing[f] == 0 {
		delete(j.syncing, f)
		if i := slices.Index(j.retired, f); i >= 0 {
			j.retired = slices.Delete(j.retired, i, i+1)
			err = errors.Join(err, f.Close())
		}
	}
	return err
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
