// Package bodypin reads upstream request bodies that share the memory of
// the client's request body instead of copying it. The client's body is
// pooled: whoever holds a part of it pins it (Pinner), and the last to
// let go returns it to its pool. A Reader holds a pin from its making
// until its first Close, which the HTTP transport may call after the
// exchange returned (a body still being written when the answer came).
package bodypin

import (
	"io"
	"sync/atomic"
)

// Pinner counts the holders of a request body's memory.
type Pinner interface {
	// Pin adds a holder.
	Pin()
	// Unpin lets go of one.
	Unpin()
}

// Reader reads segments of memory one after the other (spans of the
// client's body and the bytes of the edits between them), holding a pin
// of its Pinner, if any, until its first Close.
type Reader struct {
	// cur is what is left of the segment being read, rest the segments
	// after it; the caller's slices are resliced, never written.
	cur    []byte
	rest   [][]byte
	pin    Pinner
	closed atomic.Bool
}

// NewReader returns a reader of b that holds a pin of pin, if not nil.
// b is not copied: it must not change while the reader is read.
func NewReader(pin Pinner, b []byte) *Reader { return newReader(pin, b, nil) }

// NewSegmentsReader returns a reader of segs in order that holds a pin
// of pin, if not nil. Neither segs nor its segments are copied or
// changed: they must not change while the reader is read.
func NewSegmentsReader(pin Pinner, segs [][]byte) *Reader {
	if len(segs) == 0 {
		return newReader(pin, nil, nil)
	}
	return newReader(pin, segs[0], segs[1:])
}

func newReader(pin Pinner, cur []byte, rest [][]byte) *Reader {
	r := &Reader{cur: cur, rest: rest, pin: pin}
	if pin != nil {
		pin.Pin()
	}
	return r
}

// next moves to the next segment that is not empty, reporting false at
// the end.
func (r *Reader) next() bool {
	for len(r.cur) == 0 {
		if len(r.rest) == 0 {
			return false
		}
		r.cur, r.rest = r.rest[0], r.rest[1:]
	}
	return true
}

// Read reads from the segments in order.
func (r *Reader) Read(p []byte) (int, error) {
	if !r.next() {
		return 0, io.EOF
	}
	n := copy(p, r.cur)
	r.cur = r.cur[n:]
	return n, nil
}

// WriteTo writes the segments left to w, without an intermediate buffer.
func (r *Reader) WriteTo(w io.Writer) (int64, error) {
	var total int64
	for r.next() {
		n, err := w.Write(r.cur)
		total += int64(n)
		r.cur = r.cur[n:]
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// Close lets go of the reader's pin, once.
func (r *Reader) Close() error {
	if r.pin != nil && r.closed.CompareAndSwap(false, true) {
		r.pin.Unpin()
	}
	return nil
}

// Interface guards.
var (
	_ io.ReadCloser = (*Reader)(nil)
	_ io.WriterTo   = (*Reader)(nil)
)
