package chatproxy

import (
	"bytes"
	"io"
)

// maxEvent caps the bytes buffered for one SSE event. A larger event is
// forwarded in pieces, without parsing, so memory stays bounded whatever
// the upstream sends.
const maxEvent = 1 << 20

// eventReader splits an SSE stream into events, each ending with a blank
// line ("\n\n" or "\r\n\r\n"), reading into one pooled buffer. An event is
// returned as a slice of that buffer, valid until the next call.
type eventReader struct {
	r      io.Reader
	bp     *[]byte
	buf    []byte
	start  int // first byte of the pending event
	end    int // end of the bytes read
	scan   int // where to resume looking for the terminator
	split  bool
	onRead func()
	err    error
	limit  int
}

// newEventReader reads events from r; onRead, if not nil, is called after
// every read that returned bytes (it tells the attempt's watchdog that
// the stream is alive).
func newEventReader(r io.Reader, onRead func()) *eventReader {
	bp := getBuf()
	return &eventReader{r: r, bp: bp, buf: *bp, onRead: onRead, limit: maxEvent}
}

// eof reports whether the stream has ended (or failed) and nothing of it
// is left to return.
func (er *eventReader) eof() bool { return er.err != nil && er.start >= er.end }

// endsEvent reports whether b ends with an event's terminator, a blank
// line.
func endsEvent(b []byte) bool {
	return bytes.HasSuffix(b, []byte("\n\n")) || bytes.HasSuffix(b, []byte("\r\n\r\n")) || bytes.HasSuffix(b, []byte("\r\r"))
}

// release returns the buffer to the pool; the reader is unusable after it.
func (er *eventReader) release() {
	*er.bp = er.buf
	putBuf(er.bp)
	er.bp, er.buf = nil, nil
}

// next returns the next event, terminator included. whole is false for a
// piece of an event larger than the cap (and for the rest of that event),
// which must be forwarded without parsing. err is io.EOF at the end of the
// stream, after the last event, or the read error.
func (er *eventReader) next() (ev []byte, whole bool, err error) {
	for {
		if end, ok := er.terminator(); ok {
			ev = er.buf[er.start:end]
			whole = !er.split
			er.start, er.scan, er.split = end, end, false
			return ev, whole, nil
		}
		if er.err != nil {
			if er.start < er.end {
				// An unterminated tail: forward it as it is.
				ev, whole = er.buf[er.start:er.end], !er.split
				er.start, er.scan = er.end, er.end
				return ev, whole, nil
			}
			return nil, false, er.err
		}
		if er.end-er.start >= er.limit {
			// Keep two bytes back: they may begin the terminator.
			cut := er.end - 2
			ev = er.buf[er.start:cut]
			er.start, er.split = cut, true
			er.scan = max(er.scan, cut)
			return ev, false, nil
		}
		er.fill()
	}
}

// buffered reports whether another whole event is already in the buffer:
// the caller writes it before flushing, so that events the upstream sent
// together reach the client in one write, and every event is flushed as
// soon as the upstream has sent it. While it reports true, the next call
// of next returns that event without reading or moving the buffer: the
// events returned before stay valid, and the bytes after them may be
// overwritten.
func (er *eventReader) buffered() bool {
	_, ok := er.terminator()
	return ok
}

// terminator looks for the end of the pending event, returning the index
// just past its blank line.
func (er *eventReader) terminator() (int, bool) {
	for er.scan < er.end {
		i := bytes.IndexByte(er.buf[er.scan:er.end], '\n')
		if i < 0 {
			er.scan = er.end
			return 0, false
		}
		j := er.scan + i
		switch {
		case j+1 >= er.end:
			er.scan = j
			return 0, false
		case er.buf[j+1] == '\n':
			return j + 2, true
		case er.buf[j+1] == '\r':
			if j+2 >= er.end {
				er.scan = j
				return 0, false
			}
			if er.buf[j+2] == '\n' {
				return j + 3, true
			}
		}
		er.scan = j + 1
	}
	return 0, false
}

// fill reads more bytes, first making room by moving the pending event to
// the front of the buffer or by growing it up to the cap.
func (er *eventReader) fill() {
	if er.end == len(er.buf) {
		if er.start > 0 {
			n := copy(er.buf, er.buf[er.start:er.end])
			er.scan -= er.start
			er.start, er.end = 0, n
		} else {
			nb := make([]byte, min(2*len(er.buf), er.limit))
			copy(nb, er.buf[:er.end])
			er.buf = nb
		}
	}
	n, err := er.r.Read(er.buf[er.end:])
	er.end += n
	if n > 0 && er.onRead != nil {
		er.onRead()
	}
	if err != nil {
		er.err = err
	}
}
