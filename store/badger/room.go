package badger

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/dustin/go-humanize"
	"go.uber.org/zap"

	"github.com/caddy-air/caddy-air/store"
)

// Badger writes through memory maps: its memtable's log (2×MemTableSize),
// its value log (2×ValueLogFileSize) and its DISCARD file are created as
// sparse files, mapped at their full size and filled by stores into the
// mapping; its tables are created at their size, mapped and filled by a
// copy. A store into a page that has no block behind it makes the kernel
// allocate one, and when the file system has none left it raises SIGBUS,
// which kills the process: Badger sees no error. And once a new memtable
// fails to be created, Badger's next write dereferences a nil memtable.
//
// So the store never lets Badger meet a full disk:
//
//   - every file that Badger writes through a mapping (.mem, .vlog,
//     DISCARD) is allocated (fallocate) as soon as the store sees it: at
//     open, and before each write for the files that the previous write
//     created. A store into an allocated block needs no new one, however
//     full the disk is.
//   - every write (Set, Delete, Update, value-log GC, compaction) first
//     measures the free space (statfs) and refuses with
//     store.ErrStorageFull when less than the reserve is free: what one
//     write may still make Badger allocate (the first pages of a new
//     memtable or value log, the table that flushes the old memtable) and
//     what a compaction may rewrite.
//
// The free space is measured at every write, not from a cached measure: a
// statfs costs about a microsecond. What the store cannot exclude is
// another process taking the whole reserve in the microseconds between
// that measure and Badger's allocation for a write that rotates a file; a
// disk that fills at any slower pace finds every write refused first. On a
// copy-on-write file system (btrfs, ZFS) an allocated block still needs a
// new one when it is overwritten, so none of this holds there.
const (
	// reserveBase is the free space that every write leaves: a flushed
	// memtable's table (about MemTableSize), the first pages of a new
	// memtable's log and value log before they are allocated, Badger's
	// manifest, with room to spare.
	reserveBase = 16 << 20
	// maxReserveTables bounds the share of the reserve kept for a
	// compaction's rewrite of the tables.
	maxReserveTables = maxOnDemandTables
)

// room gates the writes of a DB on the free space of its directory and
// allocates the files that Badger writes through mappings.
type room struct {
	dir    string
	log    *zap.Logger
	tables atomic.Int64 // bytes of the table files at the last count

	mu   sync.Mutex // held while files are allocated
	mem  int        // the newest .mem file allocated (its fid)
	vlog int        // the newest .vlog file allocated (its fid)
	full atomic.Bool
	// statfs measures the free space; a test replaces it.
	statfs func(dir string) (int64, error)
}

// newRoom allocates the files that Badger has mapped in dir.
func newRoom(dir string, log *zap.Logger) (*room, error) {
	r := &room{dir: dir, log: log, statfs: freeBytes}
	r.tables.Store(tablesSize(dir))
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		name := e.Name()
		fid, ext := splitFid(name)
		if ext == "" && name != discardFile {
			continue
		}
		if err := r.allocate(name); err != nil {
			// Not fatal: writes stay refused until the file is allocated.
			log.Warn("allocating a file of the store", zap.String("file", name), zap.Error(err))
			continue
		}
		switch ext {
		case memExt:
			r.mem = max(r.mem, fid)
		case vlogExt:
			r.vlog = max(r.vlog, fid)
		}
	}
	return r, nil
}

// File names of Badger's mapped files (see badger's memtable.go, value.go
// and discard.go).
const (
	memExt      = ".mem"
	vlogExt     = ".vlog"
	discardFile = "DISCARD"
)

// splitFid splits a memtable or value-log file name into its file id and
// extension; ext is "" for any other name.
func splitFid(name string) (fid int, ext string) {
	ext = filepath.Ext(name)
	if ext != memExt && ext != vlogExt {
		return 0, ""
	}
	fid, err := strconv.Atoi(strings.TrimSuffix(name, ext))
	if err != nil {
		return 0, ""
	}
	return fid, ext
}

// reserve returns the free space that writes leave.
func (r *room) reserve() int64 {
	return reserveBase + min(r.tables.Load(), maxReserveTables)
}

// check allocates the memtable and value-log files that Badger created
// since the last check and returns store.ErrStorageFull, wrapped with the
// figures, when a write must not proceed: less than the reserve plus need
// is free, or a file could not be allocated. A nil room (an in-memory
// store) always has room.
func (r *room) check(need int64) error {
	if r == nil {
		return nil
	}
	if err := r.allocateNew(); err != nil {
		return r.refuse(err)
	}
	free, err := r.statfs(r.dir)
	if err != nil {
		return r.refuse(fmt.Errorf("%w: cannot measure the free space of %s: %v", store.ErrStorageFull, r.dir, err))
	}
	if want := r.reserve() + need; free < want {
		return r.refuse(fmt.Errorf("%w: %s has %s free, less than the %s that the store keeps for its own writes",
			store.ErrStorageFull, r.dir, humanize.IBytes(uint64(max(free, 0))), humanize.IBytes(uint64(want))))
	}
	if r.full.CompareAndSwap(true, false) {
		r.log.Info("the store has room again; writes resume")
	}
	return nil
}

// closeRoom is the free space that Badger's flush of the memtable at Close
// needs: a table of about MemTableSize, with room to spare.
const closeRoom = 4 << 20

// flushable returns store.ErrStorageFull when less than closeRoom is free.
func (r *room) flushable() error {
	if r == nil {
		return nil
	}
	free, err := r.statfs(r.dir)
	if err != nil {
		return fmt.Errorf("%w: cannot measure the free space of %s: %v", store.ErrStorageFull, r.dir, err)
	}
	if free < closeRoom {
		return fmt.Errorf("%w: %s has %s free", store.ErrStorageFull, r.dir, humanize.IBytes(uint64(max(free, 0))))
	}
	return nil
}

// refuse logs the first refusal of a run of them and returns err.
func (r *room) refuse(err error) error {
	if r.full.CompareAndSwap(false, true) {
		r.log.Error("refusing writes to the store", zap.Error(err))
	}
	return err
}

// allocateNew allocates the memtable and value-log files that follow the
// newest allocated ones, while they exist: Badger numbers each new one
// after the last.
func (r *room) allocateNew() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	for {
		name := fmt.Sprintf("%05d%s", r.mem+1, memExt)
		if !r.exists(name) {
			break
		}
		if err := r.allocate(name); err != nil {
			return err
		}
		r.mem++
	}
	for {
		name := fmt.Sprintf("%06d%s", r.vlog+1, vlogExt)
		if !r.exists(name) {
			break
		}
		if err := r.allocate(name); err != nil {
			return err
		}
		r.vlog++
	}
	return nil
}

func (r *room) exists(name string) bool {
	_, err := os.Lstat(filepath.Join(r.dir, name))
	return err == nil
}

// allocate gives every byte of the file name in the store's directory a
// block, changing neither its size nor its content. It allocates nothing
// when the file's holes would leave less than reserveBase free: writes are
// refused then, and the reserve stays for the writes under way.
func (r *room) allocate(name string) error {
	f, err := os.OpenFile(filepath.Join(r.dir, name), os.O_RDWR, 0)
	if os.IsNotExist(err) {
		return nil // Badger removed it meanwhile (a flushed memtable)
	}
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	holes := fi.Size() - st.Blocks*512
	if holes <= 0 {
		return nil
	}
	free, err := r.statfs(r.dir)
	if err != nil {
		return err
	}
	if free-holes < reserveBase {
		return fmt.Errorf("%w: allocating %s of %s needs %s, and %s is free",
			store.ErrStorageFull, humanize.IBytes(uint64(holes)), name, humanize.IBytes(uint64(holes+reserveBase)), humanize.IBytes(uint64(max(free, 0))))
	}
	if err := fallocate(f, fi.Size()); err != nil {
		return fmt.Errorf("%w: allocating %s: %v", store.ErrStorageFull, name, err)
	}
	return nil
}

// freeBytes returns the bytes free for an unprivileged writer in dir's
// file system: the reserved blocks of root do not count.
func freeBytes(dir string) (int64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return int64(st.Bavail) * int64(st.Bsize), nil
}
