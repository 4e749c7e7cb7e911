package reqbody

import (
	"errors"
	"net/http"
	"sync/atomic"

	"github.com/caddy-air/caddy-air/apierror"
)

// DefaultMaxBuffered is the default budget of request bodies held in
// memory at once, by the whole process. 256 MiB is sixteen bodies of the
// default 16 MiB limit, or about a thousand typical chat requests of a few
// hundred KiB, in flight together: far above what two cores forward at
// once, and small enough that a flood of slow uploads cannot take more
// than that on top of the gateway's ~60 MB.
const DefaultMaxBuffered = 256 << 20

// bodies is the budget of request bodies buffered by every air handler of
// the process. Each started config sets its limit (the last one wins), and
// a reload does not reset what requests in flight hold.
var bodies = newBudget(DefaultMaxBuffered)

// errBudget is returned by a read whose next buffer would overrun the
// budget.
var errBudget = errors.New("the budget of buffered request bodies is spent")

// ErrBusy answers a request whose body does not fit the budget.
var ErrBusy = func() *apierror.Error {
	e := apierror.New(http.StatusServiceUnavailable, apierror.TypeServer, "server_busy",
		"the gateway is buffering too many request bodies at once; retry shortly")
	e.RetryAfter = 1
	return e
}()

// Budget bounds the memory of request bodies being buffered. Buffers
// are charged by capacity as they grow and released when their exchange
// ends, so the bound holds whatever lengths clients declare.
type Budget struct {
	limit atomic.Int64
	used  atomic.Int64
}

func newBudget(limit int64) *Budget {
	b := new(Budget)
	b.limit.Store(limit)
	return b
}

// setLimit changes the budget; charges already made stay.
func (b *Budget) setLimit(limit int64) { b.limit.Store(limit) }

// SetLimit changes the process's budget of buffered bodies; charges
// already made stay. Each started config sets it (the last one wins).
func SetLimit(limit int64) { bodies.setLimit(limit) }

// Global returns the process's budget of buffered bodies, which the task
// service charges with the provider answers it holds.
func Global() *Budget { return bodies }

// take charges n bytes, or reports false, charging nothing, when they do
// not fit.
func (b *Budget) take(n int64) bool {
	if b.used.Add(n) > b.limit.Load() {
		b.used.Add(-n)
		return false
	}
	return true
}

// give releases n bytes taken before.
func (b *Budget) give(n int64) { b.used.Add(-n) }

// Take is take, for the task service: it charges the budget with the
// provider answers it holds (OpenAI Images' base64 images).
func (b *Budget) Take(n int64) bool { return b.take(n) }

// Give is give, for the task service.
func (b *Budget) Give(n int64) { b.give(n) }
