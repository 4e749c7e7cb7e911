// Package reqbody reads request bodies into pooled buffers of size
// classes, charged to one budget of buffered bodies for the whole process,
// with a chunked path for bodies that trickle in. The buffers are counted
// by reference so that a body sent upstream stays until its transports
// closed it.
package reqbody

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/caddy-air/caddy-air/apierror"
)

// TooLarge is the answer to a request body larger than limit bytes (413).
func TooLarge(limit int64) *apierror.Error {
	return apierror.New(http.StatusRequestEntityTooLarge, apierror.TypeInvalidRequest, "request_too_large",
		fmt.Sprintf("request body is larger than the limit of %d bytes", limit))
}

// Body is a request body read into a pooled buffer, charged to a
// budget by the buffer's capacity. Its holders count references: the
// handler that read it holds one until its exchange ends, and every
// upstream request sending it holds one until its transport closed it
// (Pin, Unpin). The buffer returns to its pool, and the charge to the
// budget, when the last one lets go, exactly once.
type Body struct {
	budget *Budget
	buf    *[]byte // nil once returned
	class  int
	n      int   // length of the body
	charge int64 // what the budget holds for buf: its capacity
	// want is the size of the class of the declared length, or 0: the
	// buffer grows eightfold toward it and never past it.
	want  int
	refs  atomic.Int32
	probe [1]byte // reads past a full buffer
	// released is set once the handler let go of its hold.
	released bool
}

// Bytes returns the body. It must not be used after the last release.
func (b *Body) Bytes() []byte { return (*b.buf)[:b.n:len(*b.buf)] }

// Pin adds a holder of the body.
func (b *Body) Pin() { b.refs.Add(1) }

// Unpin lets go of a holder; the last one returns the buffer.
func (b *Body) Unpin() {
	switch n := b.refs.Add(-1); {
	case n > 0:
		return
	case n < 0:
		panic("reqbody: a request body was released more often than held")
	}
	putBodyBuffer(b.buf, b.class)
	b.buf = nil
	b.budget.give(b.charge)
}

// Release lets go of the handler's hold, taken by Read; calls after
// the first do nothing, so that a handler may let go early and still
// defer a release for its other paths. Only the handler calls it.
func (b *Body) Release() {
	if b.released {
		return
	}
	b.released = true
	b.Unpin()
}

// Reserve makes room for n bytes in the buffer, if the budget allows
// (reserve), for gateway.Body.
func (b *Body) Reserve(n int) { b.reserve(n) }

// Read reads r's body up to limit bytes: a larger one gives a 413. The
// buffer comes from the pool of its size class, charged to the process's
// budget of buffered request bodies (see Budget). It starts at
// minBodyBuffer and grows only when full, so that it never holds more
// than eight times the bytes that arrived, whatever Content-Length says:
// a client that declares 16 MiB and sends 300 bytes holds 512 bytes. A
// declared length makes it grow eightfold up to the length's class (few
// copies for large bodies); without one it doubles. The
// caller must release the body when its exchange ends, after the response
// is complete, whatever happened; on error there is nothing to release.
func Read(w http.ResponseWriter, r *http.Request, limit int64) (*Body, error) {
	if r.ContentLength > limit {
		return nil, TooLarge(limit)
	}
	rd := io.Reader(r.Body)
	if r.ContentLength < 0 {
		// Without a declared length, only MaxBytesReader stops a body at
		// the limit (and closes the connection behind it).
		rd = http.MaxBytesReader(w, r.Body, limit)
	}
	body, err := bodies.read(rd, r.ContentLength, limit)
	if err != nil {
		return nil, readError(err, limit)
	}
	return body, nil
}

// readError is the answer to a body that could not be read. (In a function
// of its own, the target of errors.As is allocated only on errors.)
func readError(err error, limit int64) error {
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe), errors.Is(err, errTooLarge):
		return TooLarge(limit)
	case errors.Is(err, errBudget):
		return ErrBusy
	}
	return apierror.InvalidRequest("", "could not read the request body: "+err.Error())
}

// declaredGrowth is how many times larger a buffer grows while the body's
// declared length is still larger than the buffer.
const declaredGrowth = 8

// errTooLarge is returned by a read past its limit.
var errTooLarge = errors.New("request body too large")

// read reads rd to its end, at most limit bytes, into a pooled buffer
// charged to b. declared is the length the client announced, or -1. On
// error, nothing stays charged or taken from the pools.
func (b *Budget) read(rd io.Reader, declared, limit int64) (*Body, error) {
	body := &Body{budget: b}
	body.refs.Store(1)
	if declared > minBodyBuffer && declared <= limit {
		if c := classFor(int(declared)); c != unpooled {
			body.want = classSize(c)
		}
	}
	if !b.take(minBodyBuffer) {
		return nil, errBudget
	}
	body.buf, body.class = getBodyBuffer(minBodyBuffer)
	body.charge = minBodyBuffer
	err := body.readFrom(rd, limit)
	if err != nil {
		body.Release()
		return nil, err
	}
	return body, nil
}

// readFrom reads rd to its end into the buffer, growing it as needed. A
// body still arriving slowBodyAfter after its read began reads its rest
// in chunks instead (readSlow).
func (b *Body) readFrom(rd io.Reader, limit int64) error {
	start := time.Now()
	for {
		if buf := *b.buf; b.n < len(buf) {
			k, err := rd.Read(buf[b.n:])
			b.n += k
			if int64(b.n) > limit {
				return errTooLarge
			}
			if err == io.EOF {
				return nil
			}
			if err != nil {
				return err
			}
			continue
		}
		// The buffer is full: a body that fills it exactly ends here, so
		// look for more before doubling it.
		k, err := rd.Read(b.probe[:])
		if k > 0 {
			if int64(b.n) >= limit {
				return errTooLarge
			}
			if err == nil && time.Since(start) > slowBodyAfter {
				return b.readSlow(rd, limit, b.probe[0])
			}
			if !b.grow() {
				return errBudget
			}
			(*b.buf)[b.n] = b.probe[0]
			b.n++
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// reserve makes room for n bytes in the body's buffer, growing it through
// the pools, or reports false when the budget cannot cover it.
func (b *Body) reserve(n int) bool {
	for len(*b.buf) < n {
		if !b.grow() {
			return false
		}
	}
	return true
}

// grow moves the body to a buffer of the next size (eight times larger, up
// to the declared length's class, while that is still larger than the
// buffer; otherwise nextSize), charging the difference first, and returns
// the old buffer to its pool.
func (b *Body) grow() bool {
	size := nextSize(len(*b.buf))
	if b.want > len(*b.buf) {
		// The declared length is still ahead: grow eightfold toward it.
		// The buffer never holds more than eight times what arrived, and
		// a megabyte body is copied about a seventh of its size on the
		// way, not once over as when doubling.
		size = min(declaredGrowth*len(*b.buf), b.want)
	}
	return b.resize(size)
}

// resize moves the body to a buffer of size bytes (a class's size, or
// larger than every class), charging the difference first, and returns
// the old buffer to its pool; it reports false when the budget cannot
// cover it.
func (b *Body) resize(size int) bool {
	old, oldClass := b.buf, b.class
	more := int64(size - len(*old))
	if !b.budget.take(more) {
		return false
	}
	b.buf, b.class = getBodyBuffer(size)
	b.charge += more
	copy(*b.buf, (*old)[:b.n])
	putBodyBuffer(old, oldClass)
	return true
}
