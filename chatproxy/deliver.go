package chatproxy

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/caddy-air/caddy-air/billing"
)

// copyHeader copies to dst the upstream response headers a client may use:
// content type and encoding, request ids, rate limits, retry-after and the
// provider's own openai-* / anthropic-* headers. Hop-by-hop headers are
// never copied. Content-Length is copied only when withLength is true, i.e.
// when the body passes through unchanged.
func copyHeader(dst, src http.Header, withLength bool) {
	for k, v := range src {
		switch {
		case k == "Content-Type", k == "Content-Encoding", k == "Cache-Control",
			k == "X-Request-Id", k == "Request-Id", k == "Retry-After",
			strings.HasPrefix(k, "Openai-"), strings.HasPrefix(k, "Anthropic-"), strings.HasPrefix(k, "X-Ratelimit-"):
			dst[k] = v
		case k == "Content-Length" && withLength:
			dst[k] = v
		}
	}
}

// isEventStream reports an SSE content type, whatever its parameters. It
// reads the media type without mime.ParseMediaType, which builds a map of
// the parameters on every response.
func isEventStream(ct string) bool {
	mt, _, _ := strings.Cut(ct, ";")
	return strings.EqualFold(strings.TrimSpace(mt), "text/event-stream")
}

// deliver writes an upstream response to the client and fills res.
func (p *Proxy) deliver(w http.ResponseWriter, r *http.Request, c *Call, at *attempt, res *Result) {
	resp := at.resp
	res.Reached, res.Status, res.Err = true, resp.StatusCode, nil
	sse := isEventStream(resp.Header.Get("Content-Type"))
	encoded := resp.Header.Get("Content-Encoding") != "" && !strings.EqualFold(resp.Header.Get("Content-Encoding"), "identity")
	ok := resp.StatusCode >= 200 && resp.StatusCode < 300
	copyHeader(w.Header(), resp.Header, !sse || !ok || encoded)
	w.WriteHeader(resp.StatusCode)

	t := tap{proto: c.Protocol, strip: c.StripUsage, maxDepth: p.MaxJSONDepth}
	var readErr error
	var gone bool
	switch {
	case !ok || encoded:
		// Errors and bodies we cannot read pass through untouched.
		readErr, gone = p.copyOpaque(w, at, res, sse)
		if !ok {
			res.Outcome, res.Source = OutcomeUpstreamError, billing.SourceReported
			if gone || r.Context().Err() != nil {
				res.Err = errClientGone
			}
			return
		}
		t.outBytes = res.BytesOut
	case sse:
		readErr, gone = p.copyStream(w, at, res, &t)
	default:
		readErr, gone = p.copyJSON(w, at, res, &t)
	}
	gone = gone || r.Context().Err() != nil
	timedOut := !gone && context.Cause(at.ctx) == errTimeout
	cut := gone || timedOut || readErr != nil
	res.Usage, res.Source = t.result(c.Inspected.PromptBytes, cut, gone)
	switch {
	case gone:
		res.Outcome, res.Err = OutcomePartial, errClientGone
	case timedOut:
		res.Outcome, res.Err = OutcomeTimeout, errTimeout
	case readErr != nil:
		res.Outcome, res.Err = OutcomeUpstreamError, readErr
	case t.upstreamError:
		res.Outcome = OutcomeUpstreamError
	default:
		res.Outcome = OutcomeOK
	}
}

// flush pushes buffered bytes to the client; a writer that cannot flush is
// not an error.
func flush(rc *http.ResponseController) error {
	if err := rc.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return err
	}
	return nil
}

// headerFlushDelay is how long a stream's response headers wait for the
// first event before they are sent alone.
const headerFlushDelay = 100 * time.Millisecond

// copyStream forwards an SSE response event by event, and taps its usage.
// It flushes as soon as no further whole event is already buffered: each
// event reaches the client as soon as the upstream sent it, and events that
// arrived together leave in one write, as with reverse_proxy. The response
// headers leave with the first event, or alone after headerFlushDelay if
// the upstream has not sent one by then (a model that thinks first), so
// that the client knows its request is being answered; flushing them alone
// at once would cost a write per stream. It returns the upstream read error
// (nil at a clean end) and whether writing to the client failed.
func (p *Proxy) copyStream(w http.ResponseWriter, at *attempt, res *Result, t *tap) (readErr error, gone bool) {
	rc := http.NewResponseController(w)
	headers := newHeaderFlusher(rc)
	defer headers.cancel()
	er := newEventReader(at.resp.Body, at.idle)
	defer er.release()
	dirty := false // written but not flushed
	for {
		ev, whole, err := er.next()
		if len(ev) > 0 {
			out := ev
			if whole {
				out = t.event(ev)
			} else {
				t.outBytes += int64(len(ev))
			}
			var werr error
			if len(out) > 0 {
				if res.BytesOut == 0 {
					headers.cancel()
				}
				var n int
				n, werr = w.Write(out)
				res.BytesOut += int64(n)
				dirty = true
			}
			if werr == nil && dirty && !er.buffered() {
				werr, dirty = flush(rc), false
			}
			if werr != nil {
				at.cancel(errClientGone)
				return nil, true
			}
		}
		if err != nil {
			headers.cancel()
			if dirty && flush(rc) != nil {
				at.cancel(errClientGone)
				return nil, true
			}
			if err == io.EOF {
				return nil, false
			}
			return err, false
		}
	}
}

// headerFlusher flushes a stream's response headers after
// headerFlushDelay unless cancelled first.
type headerFlusher struct {
	mu    sync.Mutex
	done  bool
	timer *time.Timer
}

// newHeaderFlusher starts the delay.
func newHeaderFlusher(rc *http.ResponseController) *headerFlusher {
	h := &headerFlusher{}
	h.timer = time.AfterFunc(headerFlushDelay, func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		if !h.done {
			h.done = true
			// An error shows again in the next write.
			_ = flush(rc)
		}
	})
	return h
}

// cancel stops the delay. Once it returns, the flusher does not touch the
// response writer: the caller may write, and return from the handler.
func (h *headerFlusher) cancel() {
	h.mu.Lock()
	h.done = true
	h.mu.Unlock()
	h.timer.Stop()
}

const (
	// maxCapture bounds the copy of a non-streaming response kept to read
	// its usage.
	maxCapture = 1 << 20
	// tailKeep is how much of the end of a larger response is kept to find
	// its usage.
	tailKeep = 64 << 10
)

// copyJSON forwards a non-streaming response while keeping a bounded copy
// of it, then reads its usage. Past maxCapture only the last tailKeep bytes
// are kept, where the usage object is.
func (p *Proxy) copyJSON(w http.ResponseWriter, at *attempt, res *Result, t *tap) (readErr error, gone bool) {
	bp := getBuf()
	defer putBuf(bp)
	capture := (*bp)[:0]
	var tail []byte
	for {
		if len(capture) == cap(capture) && tail == nil {
			if cap(capture) < maxCapture {
				capture = append(capture, 0)[:len(capture)]
			} else {
				tail = make([]byte, 0, 2*tailKeep)
				tail = append(tail, capture[len(capture)-tailKeep:]...)
			}
		}
		var chunk []byte
		if tail == nil {
			chunk = capture[len(capture):cap(capture)]
		} else {
			chunk = capture[:min(cap(capture), bufSize)] // scratch once the capture is full
		}
		n, err := at.resp.Body.Read(chunk)
		if n > 0 {
			chunk = chunk[:n]
			if tail == nil {
				capture = capture[:len(capture)+n]
			} else {
				if len(tail)+n > cap(tail) {
					keep := tail[max(len(tail)-tailKeep, 0):]
					tail = append(tail[:0], keep...)
				}
				tail = append(tail, chunk...)
			}
			m, werr := w.Write(chunk)
			res.BytesOut += int64(m)
			if werr != nil {
				at.cancel(errClientGone)
				gone = true
				break
			}
		}
		if err != nil {
			if err != io.EOF {
				readErr = err
			}
			break
		}
	}
	complete := readErr == nil && !gone
	if tail == nil {
		t.body(capture, complete)
		if !complete {
			t.outBytes = res.BytesOut
		}
	} else {
		t.tailUsage(tail)
		t.outBytes = res.BytesOut
	}
	return readErr, gone
}

// copyOpaque forwards a body untouched: upstream errors, and responses in
// a content encoding the gateway cannot read. Streams are flushed on every
// read.
func (p *Proxy) copyOpaque(w http.ResponseWriter, at *attempt, res *Result, stream bool) (readErr error, gone bool) {
	bp := getBuf()
	defer putBuf(bp)
	buf := *bp
	rc := http.NewResponseController(w)
	for {
		n, err := at.resp.Body.Read(buf)
		if n > 0 {
			if stream {
				at.idle()
			}
			m, werr := w.Write(buf[:n])
			res.BytesOut += int64(m)
			if werr == nil && stream {
				werr = flush(rc)
			}
			if werr != nil {
				at.cancel(errClientGone)
				return nil, true
			}
		}
		if err != nil {
			if err == io.EOF {
				return nil, false
			}
			return err, false
		}
	}
}
