package translate

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/caddy-air/caddy-air/dialect"
)

// Writer wraps a client's http.ResponseWriter and translates what the
// proxy writes to it, the provider's answer, into the client's protocol:
// an event stream event by event as it arrives (the provider's bytes are
// fed to its stream decoder, each neutral event encoded at once); a whole
// answer or an error once complete, at Close. Call Close once the proxy
// is done writing. When the client's protocol is the wire's (a Messages
// client of a cloud provider, whose answers are transcoded into
// Messages), it passes the answer through and only adds DroppedHeader.
type Writer struct {
	w       http.ResponseWriter
	x       *Exchange
	same    bool // the client's protocol is the wire's: pass through
	status  int
	started bool // WriteHeader was called
	stream  bool
	ended   bool // the stream's last event (stop or error) was written
	dec     dialect.StreamDecoder
	enc     dialect.StreamEncoder
	body    []byte // a whole answer, until Close
	out     []byte
	ev      dialect.Event
}

// Writer returns the translating writer of x's answer to w.
func (x *Exchange) Writer(w http.ResponseWriter) *Writer {
	return &Writer{w: w, x: x, same: x.t.Client == x.t.Wire}
}

// setDropped lists the parameters left out, as the answer starts.
func (tw *Writer) setDropped() {
	if v := tw.x.DroppedValue(); v != "" {
		tw.w.Header().Set(DroppedHeader, v)
	}
}

// Header is the client's response header.
func (tw *Writer) Header() http.Header { return tw.w.Header() }

// Unwrap returns the client's writer, for http.ResponseController: a
// stream's translated events are written through at once, so a flush
// reaches them.
func (tw *Writer) Unwrap() http.ResponseWriter { return tw.w }

// WriteHeader starts the answer: a successful event stream is started at
// once, anything else waits for Close.
func (tw *Writer) WriteHeader(status int) {
	if tw.started {
		return
	}
	tw.started, tw.status = true, status
	if tw.same {
		tw.setDropped()
		tw.w.WriteHeader(status)
		return
	}
	h := tw.w.Header()
	if status >= 200 && status < 300 && isEventStream(h.Get("Content-Type")) {
		tw.stream = true
		tw.dec = tw.x.t.answer.NewStreamDecoder()
		tw.enc = tw.x.t.client.NewStreamEncoder(tw.x.req)
		h.Del("Content-Length")
		tw.setDropped()
		tw.w.WriteHeader(status)
	}
}

// Write translates p: stream bytes as they come, a whole answer at Close.
func (tw *Writer) Write(p []byte) (int, error) {
	if !tw.started {
		tw.WriteHeader(http.StatusOK)
	}
	if tw.same {
		return tw.w.Write(p)
	}
	if !tw.stream {
		tw.body = append(tw.body, p...)
		return len(p), nil
	}
	if tw.ended {
		return len(p), nil
	}
	tw.dec.Feed(p)
	out := tw.out[:0]
	for tw.dec.Next(&tw.ev) {
		if tw.ev.Kind == dialect.EventStart && tw.ev.Model == "" {
			// A provider that names no model: the one the client asked for.
			tw.ev.Model = tw.x.req.Model
		}
		out = tw.enc.Encode(out, &tw.ev)
		if tw.ev.Kind == dialect.EventStop || tw.ev.Kind == dialect.EventError {
			tw.ended = true
			break
		}
	}
	tw.out = out
	if len(out) == 0 {
		return len(p), nil
	}
	if _, err := tw.w.Write(out); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Close ends the answer: a stream that ended before its last event gets
// the client's error event; a whole answer or error is translated and
// written.
func (tw *Writer) Close() {
	if !tw.started || tw.same {
		return // nothing was answered (the client left), or all was passed
	}
	if tw.stream {
		if !tw.ended && tw.dec.End(&tw.ev) {
			tw.ended = true
			out := tw.enc.Encode(tw.out[:0], &tw.ev)
			if _, err := tw.w.Write(out); err == nil {
				_ = http.NewResponseController(tw.w).Flush()
			}
		}
		return
	}
	status, body := tw.translateWhole()
	tw.setDropped()
	h := tw.w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	tw.w.WriteHeader(status)
	_, _ = tw.w.Write(body)
}

// translateWhole translates a whole answer, or an error status.
func (tw *Writer) translateWhole() (int, []byte) {
	t := tw.x.t
	if tw.status < 200 || tw.status >= 300 {
		e := t.answer.DecodeError(tw.status, tw.w.Header(), tw.body)
		if e.RetryAfter > 0 && tw.w.Header().Get("Retry-After") == "" {
			tw.w.Header().Set("Retry-After", strconv.Itoa(int(e.RetryAfter.Seconds())))
		}
		return t.client.EncodeError(e)
	}
	resp, err := t.answer.DecodeResponse(tw.body)
	if err == nil {
		if resp.Model == "" {
			resp.Model = tw.x.req.Model
		}
		var out []byte
		if out, err = t.client.EncodeResponse(nil, resp); err == nil {
			return tw.status, out
		}
	}
	return t.client.EncodeError(&dialect.Error{Status: http.StatusBadGateway, Kind: dialect.ErrServer,
		Message: "the upstream provider's answer could not be translated: " + err.Error()})
}

// isEventStream reports an SSE content type.
func isEventStream(ct string) bool {
	mt, _, _ := strings.Cut(ct, ";")
	return strings.EqualFold(strings.TrimSpace(mt), "text/event-stream")
}

// Interface guard.
var _ http.ResponseWriter = (*Writer)(nil)
