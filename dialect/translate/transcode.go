package translate

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/caddy-air/caddy-air/dialect"
	"github.com/caddy-air/caddy-air/dialect/anthropic"
	"github.com/caddy-air/caddy-air/dialect/bedrock"
)

// maxAnswer bounds a cloud's whole (non-streamed) answer or error body
// read for transcoding.
const maxAnswer = 64 << 20

// transcodeBuf is the size of the reads of a cloud's stream.
const transcodeBuf = 4 << 10

// Transcoder is x's transcoding of a cloud provider's answers into the
// Messages wire (Exchange.Transcode), nil for a provider the proxy reads
// as it answers.
func (x *Exchange) Transcoder() func(*http.Response) *http.Response {
	if x.t.cloud == nil {
		return nil
	}
	return x.Transcode
}

// Transcode turns resp, a cloud provider's answer to x, into the same
// answer on the Messages wire, which the proxy then reads, taps and bills
// as an Anthropic provider's: an event stream event by event as its bytes
// arrive (a stream the cloud cut before its last event ends with
// io.ErrUnexpectedEOF, without a final event, as a cut Messages stream
// does; a malformed event becomes a Messages error event); a whole answer
// or an error (its status kept, Retry-After set from the cloud's retry
// delay) at once. Usage is normalized by the cloud's codec and written
// exactly, cache reads and writes included.
func (x *Exchange) Transcode(resp *http.Response) *http.Response {
	cloud := x.t.cloud
	h := resp.Header
	h.Del("Content-Length")
	h.Del("Content-Encoding")
	resp.ContentLength = -1
	if id := h.Get("X-Amzn-Requestid"); id != "" && h.Get("X-Request-Id") == "" {
		// AWS's request id, which the proxy passes to the client as the
		// provider's (X-Upstream-Request-Id), as it does OpenAI's.
		h.Set("X-Request-Id", id)
	}
	ok := resp.StatusCode >= 200 && resp.StatusCode < 300
	if ct := h.Get("Content-Type"); ok && (isEventStream(ct) || isAWSEventStream(ct)) {
		h.Set("Content-Type", "text/event-stream")
		resp.Body = &streamBody{src: resp.Body, dec: cloud.NewStreamDecoder(), enc: anthropic.Codec{}.NewStreamEncoder(x.req),
			id: answerID(h), model: x.req.Model}
		return resp
	}
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer+1))
	resp.Body.Close()
	var body []byte
	switch {
	case err == nil && len(raw) > maxAnswer:
		err = errors.New("the answer exceeds 64 MiB")
		fallthrough
	case err != nil:
		resp.StatusCode, body = anthropic.Codec{}.EncodeError(&dialect.Error{Status: http.StatusBadGateway, Kind: dialect.ErrServer,
			Message: "reading the upstream provider's answer: " + err.Error()})
	case !ok:
		e := cloud.DecodeError(resp.StatusCode, h, raw)
		if e.RetryAfter > 0 && h.Get("Retry-After") == "" {
			h.Set("Retry-After", strconv.Itoa(int(e.RetryAfter.Seconds())))
		}
		e.Status = resp.StatusCode
		_, body = anthropic.Codec{}.EncodeError(e)
	default:
		body, err = x.answer(raw, answerID(h))
		if err != nil {
			resp.StatusCode, body = anthropic.Codec{}.EncodeError(&dialect.Error{Status: http.StatusBadGateway, Kind: dialect.ErrServer,
				Message: "the upstream provider's answer could not be translated: " + err.Error()})
		}
	}
	resp.Status = strconv.Itoa(resp.StatusCode) + " " + http.StatusText(resp.StatusCode)
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	resp.ContentLength = int64(len(body))
	resp.Body = io.NopCloser(bytes.NewReader(body))
	return resp
}

// answer transcodes a cloud's whole answer into a Messages message.
func (x *Exchange) answer(raw []byte, id string) ([]byte, error) {
	r, err := x.t.cloud.DecodeResponse(raw)
	if err != nil {
		return nil, err
	}
	if r.ID == "" {
		r.ID = id
	}
	if r.Model == "" {
		r.Model = x.req.Model
	}
	return anthropic.Codec{}.EncodeResponse(nil, r)
}

// answerID is the message id of an answer whose body names none
// (Bedrock's): "msg_" and the provider's request id.
func answerID(h http.Header) string {
	if id := h.Get("X-Amzn-Requestid"); id != "" {
		return "msg_" + id
	}
	return ""
}

// streamBody is a cloud's event stream read as a Messages one.
type streamBody struct {
	src  io.ReadCloser
	dec  dialect.StreamDecoder
	enc  dialect.StreamEncoder
	ev   dialect.Event
	in   []byte
	out  []byte
	off  int   // start of the bytes of out not yet read
	done bool  // the stream ended: err is what follows out
	err  error // io.EOF, io.ErrUnexpectedEOF (a cut) or the read's error
	// id and model name the message when the cloud's start event does
	// not.
	id, model string
}

// Read returns the next Messages bytes, reading the cloud's stream until
// it yields some.
func (s *streamBody) Read(p []byte) (int, error) {
	for s.off >= len(s.out) {
		if s.done {
			return 0, s.err
		}
		if s.in == nil {
			s.in = make([]byte, transcodeBuf)
		}
		s.out, s.off = s.out[:0], 0
		n, err := s.src.Read(s.in)
		if n > 0 {
			s.dec.Feed(s.in[:n])
			s.drain()
		}
		if err != nil && !s.done {
			s.done = true
			switch {
			case err != io.EOF:
				s.err = err
			case !s.dec.End(&s.ev):
				s.err = io.EOF
			case s.ev.Kind == dialect.EventStop:
				// The stop of a stream that ends with its body (Gemini's),
				// with the last usage the cloud reported.
				s.out = s.enc.Encode(s.out, &s.ev)
				s.err = io.EOF
			default:
				// Cut before its last event: no final event, so that the
				// proxy sees a cut stream.
				s.err = io.ErrUnexpectedEOF
			}
		}
	}
	n := copy(p, s.out[s.off:])
	s.off += n
	return n, nil
}

// drain encodes the decoded events; a stop or an error ends the stream.
func (s *streamBody) drain() {
	for !s.done && s.dec.Next(&s.ev) {
		if s.ev.Kind == dialect.EventStart {
			// A cloud that names neither (Bedrock): the provider's request
			// id, and the model the client asked for.
			if s.ev.ID == "" {
				s.ev.ID = s.id
			}
			if s.ev.Model == "" {
				s.ev.Model = s.model
			}
		}
		s.out = s.enc.Encode(s.out, &s.ev)
		if s.ev.Kind == dialect.EventStop || s.ev.Kind == dialect.EventError {
			s.done, s.err = true, io.EOF
		}
	}
}

// Close closes the cloud's stream.
func (s *streamBody) Close() error { return s.src.Close() }

// isAWSEventStream reports the binary event stream of an AWS service
// (Bedrock's ConverseStream), which is transcoded into SSE.
func isAWSEventStream(ct string) bool {
	mt, _, _ := strings.Cut(ct, ";")
	return strings.EqualFold(strings.TrimSpace(mt), bedrock.StreamContentType)
}
