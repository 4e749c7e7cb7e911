// Package bodypin reads upstream request bodies that share the memory of
// the client's request body instead of copying it. The client's body is
// pooled: whoever holds a part of it pins it (Pinner), and the last to
// let go returns it to its pool. A Reader holds a pin from its making
// until its first Close, which the HTTP transport may call after the
// exchange returned (a body still being written when the answer came).
package bodypin

import (
	"io"
	"net"
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
	bufs   net.Buffers
	pin    Pinner
	closed atomic.Bool
}

// NewReader returns a reader of segs in order that holds a pin of pin,
// if not nil. The segments are not copied: they must not change while
// the reader is read.
func NewReader(pin Pinner, segs ...[]byte) *Reader {
	r := &Reader{bufs: append(net.Buffers(nil), segs...), pin: pin}
	if pin != nil {
		pin.Pin()
	}
	return r
}

// Read reads from the segments in order.
func (r *Reader) Read(p []byte) (int, error) { return r.bufs.Read(p) }

// WriteTo writes the segments left to w, without an intermediate buffer
// (with one writev on a network connection).
func (r *Reader) WriteTo(w io.Writer) (int64, error) { return r.bufs.WriteTo(w) }

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
