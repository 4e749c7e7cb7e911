package caddymodule

import (
	"errors"
	"io"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/caddy-air/caddy-air/apierror"
)

// defaultMaxBufferedBodies is the default budget of request bodies held in
// memory at once, by the whole process. 256 MiB is sixteen bodies of the
// default 16 MiB limit, or about a thousand typical chat requests of a few
// hundred KiB, in flight together: far above what two cores forward at
// once, and small enough that a flood of slow uploads cannot take more
// than that on top of the gateway's ~60 MB.
const defaultMaxBufferedBodies = 256 << 20

// bodies is the budget of request bodies buffered by every air handler of
// the process. Each started config sets its limit (the last one wins), and
// a reload does not reset what requests in flight hold.
var bodies = newBodyBudget(defaultMaxBufferedBodies)

// errBudget is returned by a read whose next buffer would overrun the
// budget.
var errBudget = errors.New("the budget of buffered request bodies is spent")

// errBodiesBusy answers a request whose body does not fit the budget.
var errBodiesBusy = func() *apierror.Error {
	e := apierror.New(http.StatusServiceUnavailable, apierror.TypeServer, "server_busy",
		"the gateway is buffering too many request bodies at once; retry shortly")
	e.RetryAfter = 1
	return e
}()

// bodyBudget bounds the memory of request bodies being buffered. Buffers
// are charged by capacity as they grow and released when their request
// ends, so the bound holds whatever lengths clients declare.
type bodyBudget struct {
	limit atomic.Int64
	used  atomic.Int64
}

func newBodyBudget(limit int64) *bodyBudget {
	b := new(bodyBudget)
	b.limit.Store(limit)
	return b
}

// setLimit changes the budget; charges already made stay.
func (b *bodyBudget) setLimit(limit int64) { b.limit.Store(limit) }

// take charges n bytes, or reports false, charging nothing, when they do
// not fit.
func (b *bodyBudget) take(n int64) bool {
	if b.used.Add(n) > b.limit.Load() {
		b.used.Add(-n)
		return false
	}
	return true
}

// newCharge starts the charge of one body.
func (b *bodyBudget) newCharge() *bodyCharge { return &bodyCharge{budget: b} }

// bodyCharge is what one body holds of a budget.
type bodyCharge struct {
	budget *bodyBudget
	mu     sync.Mutex
	n      int64
}

// grow charges n more bytes.
func (c *bodyCharge) grow(n int64) bool {
	if !c.budget.take(n) {
		return false
	}
	c.mu.Lock()
	c.n += n
	c.mu.Unlock()
	return true
}

// release gives back everything charged; calling it again does nothing.
func (c *bodyCharge) release() {
	c.mu.Lock()
	n := c.n
	c.n = 0
	c.mu.Unlock()
	c.budget.used.Add(-n)
}

// Buffer sizes of a body being read: the first read gets minBodyBuffer, and
// each later buffer doubles, up to maxBodyStep more at a time, so that a
// body takes at most about twice its size, and only once its bytes have
// arrived. The declared Content-Length is never trusted for a size.
const (
	minBodyBuffer = 4 << 10
	maxBodyStep   = 4 << 20
)

// readAllBudgeted is io.ReadAll with every growth of the buffer charged to
// c first; it fails with errBudget when the budget cannot cover it.
func readAllBudgeted(rd io.Reader, c *bodyCharge) ([]byte, error) {
	var buf []byte
	for {
		if len(buf) == cap(buf) {
			grow := min(max(cap(buf), minBodyBuffer), maxBodyStep)
			if !c.grow(int64(grow)) {
				return nil, errBudget
			}
			next := make([]byte, len(buf), cap(buf)+grow)
			copy(next, buf)
			// The charge is the capacity of the current buffer; the old
			// one is garbage now.
			buf = next
		}
		n, err := rd.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}
