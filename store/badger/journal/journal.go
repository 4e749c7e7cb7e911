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
// concurrent readers (Scan, Read). Sync may run concurrently with the
// writer, from another goroutine: a syncer in the background never holds
// up the next Append for the time of its fdatasync (see Sync).
package journal

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"slices"
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

// ErrCorrupt is returned by Read when an entry's frame or checksum is
// wrong.
var ErrCorrupt = errors.New("journal: corrupt entry")

// ErrNoEntry is returned by Read for a position where no entry is, for
// example in a segment that RemoveBefore deleted.
var ErrNoEntry = errors.New("journal: no entry at this position")

// ErrStop may be returned by a Scan callback to end the scan without an
// error.
var ErrStop = errors.New("journal: stop scan")

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

// Journal is an open journal directory.
type Journal struct {
	opts   Options
	damage damageLog // regions scans could not read

	mu   sync.RWMutex // guards segs and the size of the last one
	segs []segment
	file *os.File // the last segment, open for appending; nil until the first append
	// fileMu guards the swaps of file (a new segment, Close) against
	// Sync, and syncing and retired: a segment finished while a Sync of
	// it runs is closed by that Sync once it is done, not by the writer,
	// which does not wait for it.
	fileMu  sync.Mutex
	syncing map[*os.File]int // running Syncs, per file
	retired []*os.File       // finished segments that running Syncs still use
	buf     []byte           // the writer's frame buffer, reused

	repair     Repair  // what Open repaired
	rotateNext bool    // the next append starts a new segment
	allocated  int64   // the last segment file's size, zeros after its entries included
	m          mapping // the last segment's mapping, with Options.Mapped
}

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

// Close syncs and closes the journal. It must not run concurrently with
// Append; a concurrent Sync is allowed.
func (j *Journal) Close() error {
	if j.file == nil {
		return nil
	}
	f := j.file
	err := errors.Join(j.unmap(), f.Sync())
	return errors.Join(err, j.retire(f))
}

// retire takes f, the finished last segment, out of use: j.file becomes
// nil, and f is closed now, or by the last Sync that still uses it.
func (j *Journal) retire(f *os.File) error {
	j.fileMu.Lock()
	defer j.fileMu.Unlock()
	j.file = nil
	if j.syncing[f] > 0 {
		j.retired = append(j.retired, f)
		return nil
	}
	return f.Close()
}
