package dialect

import "net/http"

// ProviderCodec converts between the neutral model and one provider
// protocol's bodies, streams and errors. It holds no connection or
// credentials: building the upstream URL and signing the request belong
// to the provider's dialect.
type ProviderCodec interface {
	// EncodeRequest appends the provider's request body for r to dst.
	EncodeRequest(dst []byte, r *Request) ([]byte, error)
	// DecodeResponse reads a complete answer.
	DecodeResponse(body []byte) (*Response, error)
	// NewStreamDecoder returns a decoder of one streamed answer.
	NewStreamDecoder() StreamDecoder
	// DecodeError reads a failed answer's status, headers and body.
	DecodeError(status int, h http.Header, body []byte) *Error
}

// StreamDecoder turns a provider's stream into neutral events. It is fed
// the stream's bytes as they arrive and yields events one at a time.
type StreamDecoder interface {
	// Feed adds the next bytes of the stream. The decoder copies what it
	// keeps.
	Feed(p []byte)
	// Next fills ev with the next complete event and reports true, or
	// reports false when the bytes fed so far hold no further event. A
	// malformed event yields an EventError with ErrServer. ev's Text is
	// valid until the next call.
	Next(ev *Event) bool
	// End reports the stream's end: an EventError with ErrCut in ev and
	// true if it ended before its final event, false if it was complete.
	// A protocol whose stream has no final event of its own (Gemini's
	// ends with its body, and its usage may follow the finish reason)
	// yields its EventStop here, with true.
	End(ev *Event) bool
}

// ClientCodec converts between the neutral model and one client
// protocol's requests, answers, streams and errors.
type ClientCodec interface {
	// DecodeRequest reads a client's request.
	DecodeRequest(body []byte) (*Request, error)
	// EncodeResponse appends the client's answer for r to dst.
	EncodeResponse(dst []byte, r *Response) ([]byte, error)
	// NewStreamEncoder returns an encoder of one streamed answer to the
	// client's request r.
	NewStreamEncoder(r *Request) StreamEncoder
	// EncodeError returns the status and body of e in the client's shape.
	EncodeError(e *Error) (int, []byte)
}

// StreamEncoder turns neutral events into a client's stream.
type StreamEncoder interface {
	// Encode appends the wire bytes of ev (possibly none, possibly
	// several protocol events) to dst.
	Encode(dst []byte, ev *Event) []byte
}
