package journal

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
)

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

// repairLast finds the end of the last whole entry of the last segment,
// cuts off anything after it and opens the segment for appending. Bytes
// that are not a torn tail are copied aside first (see Repair).
func (j *Journal) repairLast() error {
	if len(j.segs) == 0 {
		return nil
	}
	last := &j.segs[len(j.segs)-1]
	f, err := os.OpenFile(j.path(*last), os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	end := validEnd(f, last.size)
	j.allocated = last.size
	if end < last.size && j.opts.Preallocate > 0 && zeros(f, end, last.size) {
		// The preallocated end of the segment, not a repair.
		last.size = end
	}
	if end < last.size {
		j.repair = Repair{Segment: last.name(), ValidEnd: end, Cut: last.size - end}
		if !tornTail(f, end, last.size) {
			q := j.path(*last) + ".corrupt"
			if err := copyFile(f, q); err != nil {
				_ = f.Close()
				return fmt.Errorf("journal: quarantining corrupt segment %s: %w", last.name(), err)
			}
			j.repair.Quarantined = q
		}
		if err := f.Truncate(end); err != nil {
			_ = f.Close()
			return fmt.Errorf("journal: cutting torn entry off %s: %w", last.name(), err)
		}
		last.size, j.allocated = end, end
		j.rotateNext = true
	}
	if j.opts.Mapped && j.allocated > last.size {
		// Mapped appends go only into zeros this process wrote (see
		// mapped_linux.go); the next append writes them again.
		if err := f.Truncate(last.size); err != nil {
			_ = f.Close()
			return fmt.Errorf("journal: %w", err)
		}
		j.allocated = last.size
	}
	if _, err := f.Seek(end, io.SeekStart); err != nil {
		_ = f.Close()
		return fmt.Errorf("journal: %w", err)
	}
	j.fileMu.Lock()
	j.file = f
	j.fileMu.Unlock()
	return nil
}

// tornTail reports whether the bytes of f from end to size are what a
// crash leaves: the last entry, cut short or with pages the machine had
// not written back, or written in part by a process killed while it
// copied the entry into a mapping (its frame reaches the end of the file,
// or only zeros follow it, as in a preallocated segment), or zeros.
// Anything else is corruption in the middle of the data.
func tornTail(f *os.File, end, size int64) bool {
	var hdr [frameHeader]byte
	if n, _ := f.ReadAt(hdr[:], end); n < frameHeader {
		return true
	}
	l := int64(binary.LittleEndian.Uint32(hdr[:4]))
	if l > 0 && end+frameHeader+l >= size {
		return true
	}
	frameEnd := end + frameHeader
	if l <= MaxEntrySize {
		frameEnd += l
	}
	return zeros(f, frameEnd, size)
}

// zeros reports whether the bytes of f from off to size are all zero.
func zeros(f *os.File, off, size int64) bool {
	r := bufio.NewReaderSize(io.NewSectionReader(f, off, size-off), 64<<10)
	for {
		b, err := r.ReadByte()
		if err != nil {
			return true
		}
		if b != 0 {
			return false
		}
	}
}

// copyFile copies the whole of f to a new file at path and syncs it.
func copyFile(f *os.File, path string) error {
	dst, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	_, err = io.Copy(dst, io.NewSectionReader(f, 0, 1<<62))
	return errors.Join(err, dst.Sync(), dst.Close())
}

// validEnd returns the offset after the last whole, intact entry among the
// first size bytes of f.
func validEnd(f *os.File, size int64) int64 {
	r := bufio.NewReaderSize(io.NewSectionReader(f, 0, size), 64<<10)
	var off int64
	var payload []byte
	for {
		n, err := readFrame(r, &payload)
		if err != nil {
			// io.EOF at an entry boundary, or a torn or corrupt tail.
			return off
		}
		off += n
	}
}
