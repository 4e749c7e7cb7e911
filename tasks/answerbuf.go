package tasks

import (
	"errors"
	"io"
)

// Buffers is a budget of memory shared by the whole process. The service
// charges it with the large upstream answers it reads whole (OpenAI
// Images' base64 images) for as long as it holds them, so that many
// image creates at once cannot take more memory than the budget on top of
// their count. caddymodule gives the budget of buffered request bodies
// (max_buffered_bodies).
type Buffers interface {
	// Take charges n bytes, or reports false, charging nothing, when they
	// do not fit.
	Take(n int64) bool
	// Give releases n bytes taken before.
	Give(n int64)
}

// errBuffersSpent is returned by a read whose next buffer would overrun
// the Buffers.
var errBuffersSpent = errors.New("the budget of buffered bodies is spent")

// firstAnswerBuffer is the first buffer of an answer of unknown length.
const firstAnswerBuffer = 64 << 10

// charge is what one answer took from a Buffers; nil Buffers charge
// nothing. It is released once, by its holder.
type charge struct {
	b Buffers
	n int64
}

// take charges n more bytes, or reports false.
func (c *charge) take(n int64) bool {
	if c == nil || c.b == nil {
		return true
	}
	if !c.b.Take(n) {
		return false
	}
	c.n += n
	return true
}

// give releases n of the bytes taken.
func (c *charge) give(n int64) {
	if c == nil || c.b == nil {
		return
	}
	c.b.Give(n)
	c.n -= n
}

// release gives back everything taken. It may be called on nil, and more
// than once.
func (c *charge) release() {
	if c == nil || c.b == nil || c.n == 0 {
		return
	}
	c.b.Give(c.n)
	c.n = 0
}

// readAnswer reads r whole, up to limit+1 bytes (one more than limit
// tells an answer too long), into a buffer whose capacity is charged to
// ch as it grows: first the declared length (when known and within
// limit), else 64 KiB, then doubling. While a buffer grows both the old
// and the new one are charged. When the next buffer does not fit the
// budget it returns errBuffersSpent, and ch holds what the buffer took.
func readAnswer(r io.Reader, declared, limit int64, ch *charge) ([]byte, error) {
	size := int64(firstAnswerBuffer)
	if declared >= 0 && declared <= limit {
		size = declared + 1
	}
	size = min(size, limit+1)
	if !ch.take(size) {
		return nil, errBuffersSpent
	}
	buf := make([]byte, 0, size)
	for {
		if len(buf) == cap(buf) {
			if int64(len(buf)) > limit {
				return buf, nil
			}
			next := min(2*int64(cap(buf)), limit+1)
			if !ch.take(next) {
				return nil, errBuffersSpent
			}
			grown := make([]byte, len(buf), next)
			copy(grown, buf)
			ch.give(int64(cap(buf)))
			buf = grown
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}
