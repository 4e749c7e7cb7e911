package chatproxy

import (
	"bytes"
	"sync/atomic"
)

// Pinner counts the holders of a request body's memory.
type Pinner interface {
	// Pin adds a holder.
	Pin()
	// Unpin lets go of one.
	Unpin()
}

// bodyReader reads an upstream request body; it holds a pin on the body
// from its making until its first Close.
type bodyReader struct {
	bytes.Reader
	pin    Pinner
	closed atomic.Bool
}

// newBodyReader returns a reader of b that holds a pin of pin, if any.
func newBodyReader(b []byte, pin Pinner) *bodyReader {
	r := &bodyReader{pin: pin}
	r.Reset(b)
	if pin != nil {
		pin.Pin()
	}
	return r
}

// Close lets go of the reader's pin, once.
func (r *bodyReader) Close() error {
	if r.pin != nil && r.closed.CompareAndSwap(false, true) {
		r.pin.Unpin()
	}
	return nil
}
