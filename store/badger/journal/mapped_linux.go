package journal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"runtime/debug"

	"golang.org/x/sys/unix"
)

// A mapped journal (Options.Mapped) appends by copying frames into a
// MAP_SHARED mapping of its last segment instead of calling write(2).
// The copy lands in the same page-cache pages that a write would, so it
// survives a kill of the process alike, and reads through the file see it
// (Linux has one page cache for both); it costs no system call.
//
// The mapping never covers a byte that this process has not first written
// (as zeros) with write(2) and synced: a store into a page of a file that
// has no block behind it, for example past the file's end, or into a hole
// on a full disk, raises SIGBUS and would crash the process. So:
//
//   - the mapping covers the segment's allocated bytes only (the zeros of
//     Options.Preallocate), and grows with them, after preallocate wrote
//     and synced them: a full disk fails that write with ENOSPC, which
//     Append returns as before (the intent log's caller answers 503), and
//     nothing is mapped past it;
//   - Open drops the preallocated zeros after the last entry of a mapped
//     journal's last segment instead of mapping them (it does not know
//     who wrote them, or whether a hole is among them); the next append
//     writes them again;
//   - the mapping is removed before the segment is cut short (rotation)
//     and at Close.
//
// On a copy-on-write file system (btrfs, ZFS) even an overwrite of written
// blocks needs new space; a fault there is caught (debug.SetPanicOnFault),
// Append returns an error, and the journal writes with write(2) from then
// on.
type mapping struct {
	b      []byte // the mapping of the last segment's first len(b) bytes
	failed bool   // a store faulted: the journal no longer maps
}

// writeMapped writes buf, the frames of an append, at offset off of the
// last segment, into the mapping, (re)mapped to cover the segment's
// allocated bytes, and through the file when mapping is not possible.
func (j *Journal) writeMapped(buf []byte, off int64) error {
	end := off + int64(len(buf))
	if j.m.failed || end > j.allocated {
		// Not preallocated (cannot happen: Open requires Preallocate).
		_, err := j.file.WriteAt(buf, off)
		return err
	}
	if end > int64(len(j.m.b)) {
		if err := j.remap(); err != nil {
			j.m.failed = true
			_, werr := j.file.WriteAt(buf, off)
			return werr
		}
	}
	return j.m.store(buf, int(off))
}

// remap maps the last segment's allocated bytes.
func (j *Journal) remap() error {
	if err := j.unmap(); err != nil {
		return err
	}
	if j.allocated == 0 {
		return nil
	}
	b, err := unix.Mmap(int(j.file.Fd()), 0, int(j.allocated), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return fmt.Errorf("journal: mapping a segment: %w", err)
	}
	j.m.b = b
	return nil
}

// unmap removes the mapping of the last segment, if any.
func (j *Journal) unmap() error {
	if j.m.b == nil {
		return nil
	}
	b := j.m.b
	j.m.b = nil
	if err := unix.Munmap(b); err != nil {
		return fmt.Errorf("journal: unmapping a segment: %w", err)
	}
	return nil
}

// errFault is returned when a store into the mapping faulted.
var errFault = errors.New("journal: the mapped segment could not be written (fault)")

// store copies the frames in buf into the mapping at off, each frame's
// header (length and CRC) first and its payload after: a kill in between
// leaves a frame whose CRC does not match, followed by zeros, which Open
// cuts off as a torn tail. A fault of the copy is returned as errFault,
// and mapping stops.
func (m *mapping) store(buf []byte, off int) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			m.failed = true
			err = errFault
		}
	}()
	dst := m.b[off : off+len(buf)]
	for len(buf) > 0 {
		n := frameHeader + int(binary.LittleEndian.Uint32(buf))
		// One 8-byte store where the CPU allows it.
		binary.LittleEndian.PutUint64(dst, binary.LittleEndian.Uint64(buf))
		copy(dst[frameHeader:n], buf[frameHeader:n])
		buf, dst = buf[n:], dst[n:]
	}
	return nil
}

// mappingSupported reports whether Options.Mapped takes effect here.
const mappingSupported = true
