package tasks

import (
	"io"

	"github.com/caddy-air/caddy-air/bodypin"
)

// Pinner counts the holders of a request body's memory (see CreateFrom).
type Pinner = bodypin.Pinner

// upBody is an upstream request body made of segments sent one after the
// other: spans of the client's body and the few bytes of the edits between
// them, so that the client's body is not copied. pin, if set, holds the
// client body's memory: every reader of the body pins it until the
// transport closes that reader, which may be after the exchange returned.
type upBody struct {
	segs [][]byte
	n    int64
	pin  Pinner
}

// wholeBody is an upBody of one slice that nothing else holds.
func wholeBody(b []byte) *upBody { return &upBody{segs: [][]byte{b}, n: int64(len(b))} }

// add appends a segment.
func (b *upBody) add(seg []byte) {
	b.segs = append(b.segs, seg)
	b.n += int64(len(seg))
}

// Bytes returns the body in one new slice (for tests and traces).
func (b *upBody) Bytes() []byte {
	out := make([]byte, 0, b.n)
	for _, s := range b.segs {
		out = append(out, s...)
	}
	return out
}

// reader returns a reader of the whole body that holds a pin, if any, until
// its first Close.
func (b *upBody) reader() io.ReadCloser { return bodypin.NewSegmentsReader(b.pin, b.segs) }
