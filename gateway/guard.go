package gateway

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/dustin/go-humanize"
	"go.uber.org/zap"

	"github.com/caddy-air/caddy-air/apierror"
)

// guardInterval is how long a measure of the free space stands: the
// first billable request (or health check, or metrics scrape) after it
// measures again.
const guardInterval = time.Second

// Guard refuses new billable work before the storage runs out: it
// measures the free space of the storage directory's file system (if the
// backend has one) and compares it with a margin, the configured minimum
// plus the store's own reserve plus the holes of sparse files in the
// directory. Below the reserve the store refuses every write itself
// (store/badger's room.go: Badger writes through memory maps, and a store
// into a hole on a full disk kills the process with SIGBUS); the minimum
// above it is where in-flight requests finish and settle, while new ones
// are refused. Reads go on; once space is free again, writes resume
// without a restart.
//
// It measures on demand, not on a timer: the first caller of Check (or
// Refresh) after guardInterval measures, on its own goroutine, while the
// others use the last measure. A measure costs a statfs and a listing of the
// directory, tens of microseconds once a second under load; an idle
// gateway measures nothing, and its first request after a pause sees a
// fresh measure. A timer waking an idle process every second costs more on
// a virtual machine than the measure itself.
type Guard struct {
	dir     string
	minFree atomic.Int64 // set by each config that starts
	log     *zap.Logger
	// reserve returns the store's own reserve (nil: none).
	reserve func() int64
	// backlog reports a ledger that does not keep up (nil: none).
	backlog func() error

	full   atomic.Pointer[string] // why billable work is refused, nil when it is not
	free   atomic.Int64           // bytes free at the last measure
	margin atomic.Int64           // the margin at the last measure
	due    atomic.Int64           // when the last measure expires, in Unix nanoseconds
	mu     sync.Mutex             // held by the caller that measures
}

// NewGuard measures the free space of dir (none when dir is empty) once,
// against a margin of minFree plus reserve (nil: none); backlog (nil:
// none) reports a ledger that does not keep up.
func NewGuard(dir string, minFree int64, reserve func() int64, backlog func() error, log *zap.Logger) *Guard {
	g := &Guard{dir: dir, reserve: reserve, backlog: backlog, log: log}
	g.minFree.Store(minFree)
	g.measure()
	return g
}

// Refresh measures again if the last measure is older than guardInterval
// and no other caller is measuring right now (that one's result serves).
func (g *Guard) Refresh() {
	if time.Now().UnixNano() < g.due.Load() || !g.mu.TryLock() {
		return
	}
	defer g.mu.Unlock()
	if time.Now().UnixNano() < g.due.Load() {
		return // measured meanwhile
	}
	g.measure()
}

// measure updates the guard's state, logging each change.
func (g *Guard) measure() {
	defer g.due.Store(time.Now().Add(guardInterval).UnixNano())
	var why string
	var st syscall.Statfs_t
	if g.dir == "" {
		// A backend without local storage (postgres): only the ledger's
		// backlog counts.
	} else if err := syscall.Statfs(g.dir, &st); err != nil {
		why = "cannot measure the free space of the storage: " + err.Error()
	} else {
		free := int64(st.Bavail) * int64(st.Bsize)
		margin := g.minFree.Load() + sparseHoles(g.dir)
		if g.reserve != nil {
			margin += g.reserve()
		}
		g.free.Store(free)
		g.margin.Store(margin)
		if free < margin {
			why = fmt.Sprintf("the storage at %s has %s free, less than the margin of %s kept for writes already under way; free space on that file system (old ledger segments past the retention, other files) or grow it",
				g.dir, humanize.IBytes(uint64(free)), humanize.IBytes(uint64(margin)))
		}
	}
	if why == "" && g.backlog != nil {
		if err := g.backlog(); err != nil {
			why = err.Error()
		}
	}
	old := g.full.Load()
	switch {
	case why != "" && old == nil:
		g.log.Error("refusing new billable requests", zap.String("reason", why))
	case why == "" && old != nil:
		g.log.Info("storage has room again; accepting billable requests")
	}
	if why == "" {
		g.full.Store(nil)
	} else {
		g.full.Store(&why)
	}
}

// Check returns the error that refuses new billable work, or nil.
func (g *Guard) Check() *apierror.Error {
	g.Refresh()
	why := g.full.Load()
	if why == nil {
		return nil
	}
	return StorageFull(*why)
}

// SetMinFree sets the free space kept beyond the store's reserve; each
// config that starts on the storage sets its own.
func (g *Guard) SetMinFree(n int64) { g.minFree.Store(n) }

// Dir is the storage directory measured, "" for a backend without one.
func (g *Guard) Dir() string { return g.dir }

// Free is the free space, in bytes, at the last measure.
func (g *Guard) Free() int64 { return g.free.Load() }

// Margin is the margin, in bytes, at the last measure.
func (g *Guard) Margin() int64 { return g.margin.Load() }

// Full returns why billable work is refused, "" when it is not.
func (g *Guard) Full() string {
	if why := g.full.Load(); why != nil {
		return *why
	}
	return ""
}

// StorageFull is the answer to a write refused for want of space: 507
// storage_full, to be retried in 30 s.
func StorageFull(why string) *apierror.Error {
	e := apierror.New(http.StatusInsufficientStorage, apierror.TypeServer, "storage_full",
		"the gateway cannot record new requests: "+why)
	e.RetryAfter = 30
	return e
}

// sparseHoles sums, over the files directly in dir, the bytes their
// apparent size claims beyond the blocks allocated to them: what
// memory-mapped writes may still need.
func sparseHoles(dir string) int64 {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	var holes int64
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		fi, err := os.Stat(filepath.Join(dir, e.Name()))
		if err != nil {
			continue
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			holes += max(fi.Size()-st.Blocks*512, 0)
		}
	}
	return holes
}
