package chatproxy

import (
	"net/http"
	"strconv"

	"github.com/caddy-air/caddy-air/apierror"
)

// maxHeld bounds the non-streaming response body that Serve holds whole
// until its record is durable. A body that grows past it is forwarded as
// it arrives, except for its last read, which is held instead.
const maxHeld = 1 << 20

// Body returns the whole body of a non-streaming answer that Serve held
// (one that fit maxHeld), for a caller that reads its usage itself; nil
// for a stream, a larger body or an error the gateway made. It is valid
// until Close.
func (h *Held) Body() []byte {
	if h == nil || h.started || h.stream || h.err != nil {
		return nil
	}
	return h.body
}

// Held is the end of a response that Serve kept back: a whole
// non-streaming response (status, headers and body), the last read of a
// larger one, or the final event of a stream (`data: [DONE]`,
// `message_stop`, or the error event that ends a broken stream). The
// caller writes it with Release once the request's ledger record is
// durable, so that a client never holds a complete answer whose record
// could still be lost, or replaces it with Fail when the record could not
// be made durable in time.
type Held struct {
	shape  apierror.Shape
	status int
	header http.Header // sent with the body when started is false
	body   []byte
	bp     *[]byte // pooled buffer behind body, returned by Close
	// started is set when the response's headers were already written:
	// only the body's end is held.
	started bool
	// stream is set for an event stream, which is flushed.
	stream bool
	// err, when set, is the whole response: an error in the protocol's
	// shape.
	err *apierror.Error
	// broken is set for a large body that broke off on its way: nothing
	// can end it well, and the connection must be aborted.
	broken bool
	// mid is set for a stream whose last bytes written end inside an
	// event (an upstream that broke off mid-event).
	mid bool
}

// Broken reports a response that broke off after its beginning was
// written, as a non-streaming body: the caller aborts the connection
// (panic(http.ErrAbortHandler)) so that the client sees a broken response
// rather than a short one.
func (h *Held) Broken() bool { return h.broken }

// heldError holds e, written in the protocol's shape, as the whole
// response.
func heldError(s apierror.Shape, e *apierror.Error) *Held {
	return &Held{shape: s, status: e.Status, err: e}
}

// Status is the HTTP status the held response answers with, or was
// answered with already.
func (h *Held) Status() int { return h.status }

// Release writes the held bytes to w and reports how many body bytes it
// wrote.
func (h *Held) Release(w http.ResponseWriter) int64 {
	if h.err != nil {
		h.err.WriteShape(w, h.shape)
		return 0
	}
	if h.broken {
		return 0
	}
	if !h.started {
		dst := w.Header()
		for k, v := range h.header {
			dst[k] = v
		}
		dst.Set("Content-Length", strconv.Itoa(len(h.body)))
		w.WriteHeader(h.status)
	}
	n, err := w.Write(h.body)
	if err == nil && h.stream {
		_ = flush(http.NewResponseController(w))
	}
	return int64(n)
}

// Fail writes e instead of the held bytes: as the whole response when
// nothing was written yet, or as the stream's error event. It reports
// false when neither is possible, a large non-streaming body whose
// beginning is on its way: the caller must then abort the connection
// (panic(http.ErrAbortHandler)), so that the client sees a broken
// response rather than a short one.
func (h *Held) Fail(w http.ResponseWriter, e *apierror.Error) bool {
	switch {
	case !h.started:
		e.WriteShape(w, h.shape)
	case h.stream:
		if _, err := w.Write(e.StreamEvent(h.shape)); err == nil {
			_ = flush(http.NewResponseController(w))
		}
	default:
		h.broken = true
		return false
	}
	return true
}

// Close returns the held body's buffer to the pool.
func (h *Held) Close() {
	if h == nil || h.bp == nil {
		return
	}
	putBuf(h.bp)
	h.bp, h.body = nil, nil
}
