package chatproxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/caddy-air/caddy-air/apierror"
	"github.com/caddy-air/caddy-air/billing"
	"github.com/caddy-air/caddy-air/dialect"
)

// copyHeader copies to dst the upstream response headers a client may use:
// content type and encoding, request ids, rate limits, retry-after and the
// provider's own headers that dialect.KeepHeader keeps (openai-*,
// anthropic-*, but those naming the operator's account).
// The provider's request ids are renamed X-Upstream-Request-Id and
// Upstream-Request-Id: X-Request-Id and Request-Id are the gateway's.
// Hop-by-hop headers are never copied. Content-Length is copied only when
// withLength is true, i.e. when the body passes through unchanged.
func copyHeader(dst, src http.Header, withLength bool) {
	for k, v := range src {
		switch {
		case k == "X-Request-Id":
			dst["X-Upstream-Request-Id"] = v
		case k == "Request-Id":
			dst["Upstream-Request-Id"] = v
		case k == "Content-Type", k == "Content-Encoding", k == "Cache-Control", k == "Retry-After",
			strings.HasPrefix(k, "X-Ratelimit-"), dialect.KeepHeader(k):
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

// deliver forwards an upstream response to the client and fills res. A
// successful event stream is forwarded event by event, holding back its
// final event; anything else is held whole (up to maxHeld) so that a
// timeout or a cut can still be answered with an error, and so that the
// client gets it only once its record is durable. meta, when set,
// collects the answer's model and finish reasons for the attempt's span.
func (p *Proxy) deliver(w http.ResponseWriter, r *http.Request, c *Call, at *attempt, res *Result, meta *dialect.Meta) {
	resp := at.resp
	res.Reached, res.Status, res.Err = true, resp.StatusCode, nil
	if resp.StatusCode >= 400 {
		// An error answer reaches the client rebuilt and scrubbed.
		f := readFailure(c, res.Attempt, resp)
		res.Held = &Held{shape: c.Wire.ErrorShape(), status: f.status, header: f.header, body: f.body}
		res.Source, res.Outcome = billing.SourceReported, OutcomeUpstreamError
		if r.Context().Err() != nil {
			res.Outcome, res.Err = OutcomeCanceled, errClientGone
			res.Held = nil
		}
		return
	}
	ok := resp.StatusCode >= 200 && resp.StatusCode < 300
	encoded := !decodeBody(resp)
	t := c.Wire.NewTap(dialect.TapConfig{Strip: c.StripUsage, MaxDepth: p.MaxJSONDepth, Meta: meta})
	defer t.Release()
	var readErr error
	var gone bool
	if ok && !encoded && isEventStream(resp.Header.Get("Content-Type")) {
		copyHeader(w.Header(), resp.Header, false)
		w.WriteHeader(resp.StatusCode)
		readErr, gone = p.copyStream(w, at, res, t, c.Wire.ErrorShape())
	} else {
		readErr, gone = p.holdBody(w, c, at, res, t, ok && !encoded && !c.Binary)
	}
	gone = gone || r.Context().Err() != nil
	timedOut := !gone && context.Cause(at.ctx) == errTimeout
	stream := res.Held != nil && res.Held.stream
	if stream && t.Terminal() {
		// The stream is complete: what fails after its final event does
		// not matter.
		readErr, timedOut = nil, false
	}
	// A stream that ends without its protocol's final event was cut; one
	// that ended with the upstream's error event was not.
	cut := gone || timedOut || readErr != nil || stream && !streamEnded(t)
	tr := t.Result(c.Inspected.PromptBytes, cut, gone)
	res.ResponseID, res.ResponseStatus = tr.ResponseID, tr.ResponseStatus
	if ok {
		res.Usage, res.Source = tr.Usage, tr.Source
		res.ServiceTier = tr.ServiceTier
	} else {
		res.Source = billing.SourceReported // an error status: no usage
	}
	switch {
	case gone:
		res.Outcome, res.Err = OutcomePartial, errClientGone
		if res.BytesOut == 0 {
			res.Outcome = OutcomeCanceled
		}
		res.Held.Close()
		res.Held = nil
	case timedOut:
		res.Outcome, res.Err = OutcomeTimeout, errTimeout
		breakOff(res, c, apierror.New(http.StatusGatewayTimeout, apierror.TypeUpstream, "upstream_timeout",
			fmt.Sprintf("the upstream provider fell silent for %s", at.timeout)))
	case cut:
		res.Outcome = OutcomeUpstreamError
		if readErr == nil {
			readErr = errors.New("the stream ended without its final event")
		}
		res.Err = readErr
		breakOff(res, c, apierror.New(http.StatusBadGateway, apierror.TypeUpstream, "upstream_cut",
			"the upstream provider broke off the response: "+readErr.Error()))
	case !ok || t.UpstreamError():
		res.Outcome = OutcomeUpstreamError
	default:
		res.Outcome = OutcomeOK
	}
}

// streamEnded reports whether t's stream has ended: its final event or an
// error event of the upstream, after which nothing more is forwarded.
func streamEnded(t dialect.Tap) bool { return t.Terminal() || t.UpstreamError() }

// breakOff replaces what is held of a response that broke off with e: the
// whole response when none of it was written, or the stream's error event.
func breakOff(res *Result, c *Call, e *apierror.Error) {
	h := res.Held
	switch {
	case h == nil || !h.started:
		h.Close()
		res.Held, res.Status = heldError(c.Wire.ErrorShape(), e), e.Status
	case h.stream:
		h.Close()
		h.body, h.err = e.StreamEvent(c.Wire.ErrorShape()), nil
		if h.mid {
			// The upstream broke off inside an event: end it first, so
			// that the error is an event of its own.
			h.body = append([]byte("\n\n"), h.body...)
		}
	default:
		// A large body on its way: the held end is dropped and the caller
		// aborts the connection (Held.Fail).
		h.Close()
		h.body, h.broken = nil, true
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
// The events that arrived together leave in one write and one flush, as
// soon as no further whole event is already buffered: each event reaches
// the client as soon as the upstream sent it, as with reverse_proxy. They
// are gathered where they are, in the event reader's buffer, each moved
// back over the bytes the tap cut from the ones before (see run below);
// writing them one by one would pass a batch to the socket in as many
// system calls as the response writer's small buffers fill. The response
// headers leave with the first event, or alone after headerFlushDelay if
// the upstream has not sent one by then (a model that thinks first), so
// that the client knows its request is being answered; flushing them alone
// at once would cost a write per stream. It returns the upstream read error
// (nil at a clean end) and whether writing to the client failed.
func (p *Proxy) copyStream(w http.ResponseWriter, at *attempt, res *Result, t dialect.Tap, shape apierror.Shape) (readErr error, gone bool) {
	rc := http.NewResponseController(w)
	headers := newHeaderFlusher(rc)
	defer headers.cancel()
	er := newEventReader(at.resp.Body, at.read)
	defer er.release()
	held := &Held{shape: shape, status: at.resp.StatusCode, started: true, stream: true}
	res.Held = held
	// run is the batch to write: a slice of the reader's buffer, which
	// does not move while further whole events are buffered (see
	// eventReader.buffered). Each event to forward lies after it, so
	// appending one moves it back in place, or not at all when nothing
	// was cut before it.
	var run []byte
	for {
		ev, whole, err := er.next()
		if len(ev) > 0 {
			out := ev
			if whole {
				out = t.Event(ev)
			} else {
				t.Piece(ev)
			}
			held.mid = !endsEvent(ev)
			if streamEnded(t) {
				// The stream's final event (or the upstream's error
				// event) waits for the record; the events before it in
				// the batch leave now.
				held.body = append(held.body, out...)
				out = nil
			}
			if len(run) == 0 {
				run = out
			} else {
				run = append(run, out...)
			}
			if len(run) > 0 && (streamEnded(t) || !er.buffered()) {
				if res.BytesOut == 0 {
					headers.cancel()
					res.FirstByte = time.Now()
				}
				n, werr := w.Write(run)
				res.BytesOut += int64(n)
				run = nil
				if werr == nil {
					werr = flush(rc)
				}
				if werr != nil {
					at.cancel(errClientGone)
					return nil, true
				}
			}
		}
		if streamEnded(t) {
			headers.cancel()
			p.drainAfterFinal(at, er)
			return nil, false
		}
		if err != nil {
			headers.cancel()
			if err == io.EOF {
				return nil, false
			}
			return err, false
		}
	}
}

// Bounds on what an upstream may send after a stream's final event.
const (
	// finalGrace is how long the upstream has to end its response after
	// the final event, so that its connection is kept for the next
	// request; an upstream that holds the stream open longer is cut.
	finalGrace = time.Second
	// maxAfterFinal is how many bytes after the final event are read,
	// and dropped, before the upstream is cut.
	maxAfterFinal = 64 << 10
)

// errStreamEnded cancels an attempt whose stream ended with its final
// event while the upstream went on (finalGrace, maxAfterFinal).
var errStreamEnded = errors.New("the stream went on after its final event")

// drainAfterFinal reads what the upstream sends after the stream's final
// event, and drops it, until the upstream ends its response (which keeps
// its connection for the next request), or cuts it after finalGrace or
// maxAfterFinal bytes: neither the client's end nor the process's memory
// waits on an upstream that holds the stream open or floods it.
func (p *Proxy) drainAfterFinal(at *attempt, er *eventReader) {
	if !er.buffered() && er.eof() {
		return
	}
	stop := time.AfterFunc(finalGrace, func() { at.cancel(errStreamEnded) })
	defer stop.Stop()
	var n int
	for n <= maxAfterFinal {
		ev, _, err := er.next()
		n += len(ev)
		if err != nil {
			return
		}
	}
	at.cancel(errStreamEnded)
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

// tailKeep is how much of the end of a body too large to hold is kept to
// find its usage.
const tailKeep = 64 << 10

// holdBody reads a response that is not a successful event stream: whole,
// into a pooled buffer, when it fits maxHeld, for the caller to write with
// its headers once its record is durable. A larger body is forwarded as it
// arrives, but for its last read, which is held. Usage is read from it when
// tapped (a successful, plain JSON answer): from the whole body, or from
// the last tailKeep bytes of a larger one, where the usage object is.
func (p *Proxy) holdBody(w http.ResponseWriter, c *Call, at *attempt, res *Result, t dialect.Tap, tapped bool) (readErr error, gone bool) {
	resp := at.resp
	h := &Held{shape: c.Wire.ErrorShape(), status: resp.StatusCode, header: make(http.Header), bp: getBuf()}
	copyHeader(h.header, resp.Header, false)
	res.Held = h
	buf := (*h.bp)[:0]
	limit := maxHeld
	var rc *http.ResponseController
	if c.Binary {
		// A file: held no further than the pooled buffer, then
		// forwarded and flushed as it arrives.
		limit, rc = bufSize, http.NewResponseController(w)
	}
	if n := resp.ContentLength; n >= int64(cap(buf)) && n < int64(limit) {
		// A declared length is read into one buffer of that size (and a
		// byte more, to see the end), not grown to it step by step.
		putBuf(h.bp)
		b := make([]byte, n+1)
		h.bp, buf = &b, b[:0]
	}
	var tail []byte // the last bytes of a large body, for its usage
	for {
		if len(buf) == cap(buf) {
			if cap(buf) < limit {
				// Double, up to maxHeld: fewer copies than append's
				// quarter steps at these sizes.
				nb := make([]byte, len(buf), min(2*cap(buf), limit))
				copy(nb, buf)
				buf = nb
			} else if !h.started {
				// Too large to hold: send what is held, and go on
				// holding only the last read.
				if tapped {
					tail = append(make([]byte, 0, 2*tailKeep), buf[len(buf)-tailKeep:]...)
					t.Large(buf, false)
				}
				copyHeader(w.Header(), resp.Header, true)
				w.WriteHeader(resp.StatusCode)
				h.started = true
			}
		}
		if h.started && len(buf) > 0 {
			n, werr := w.Write(buf)
			res.BytesOut += int64(n)
			if werr == nil && rc != nil {
				werr = flush(rc)
			}
			if werr != nil {
				at.cancel(errClientGone)
				gone = true
				break
			}
			buf = buf[:0]
		}
		n, err := resp.Body.Read(buf[len(buf):cap(buf)])
		if n > 0 && h.started && tapped {
			if len(tail)+n > cap(tail) {
				keep := tail[max(len(tail)-tailKeep, 0):]
				tail = append(tail[:0], keep...)
			}
			tail = append(tail, buf[len(buf):len(buf)+n]...)
			t.Large(buf[len(buf):len(buf)+n], false)
		}
		buf = buf[:len(buf)+n]
		if err != nil {
			if err != io.EOF {
				readErr = err
			}
			break
		}
	}
	*h.bp, h.body = buf[:cap(buf)], buf
	if !tapped {
		return readErr, gone
	}
	complete := readErr == nil && !gone
	if !h.started {
		t.Body(buf, complete)
	} else {
		t.Tail(tail)
		t.Large(nil, true)
		t.SetOutBytes(res.BytesOut + int64(len(buf)))
	}
	return readErr, gone
}
