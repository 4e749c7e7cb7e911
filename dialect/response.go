package dialect

import (
	"time"

	"github.com/caddy-air/caddy-air/billing"
)

// StopReason is why the model stopped.
type StopReason string

// Stop reasons.
const (
	StopEnd       StopReason = "end_turn"
	StopMaxTokens StopReason = "max_tokens"
	StopSequence  StopReason = "stop_sequence"
	StopToolUse   StopReason = "tool_use"
	// StopRefusal is a stop by the provider's safety system (OpenAI
	// content_filter, Gemini SAFETY, Bedrock guardrail_intervened).
	StopRefusal StopReason = "refusal"
	// StopPause is Anthropic's pause_turn: a long server-tool turn that
	// the client continues.
	StopPause StopReason = "pause_turn"
)

// Response is a complete, non-streamed answer.
type Response struct {
	// ID is the provider's id of the answer.
	ID string
	// Model is the model that answered, as the provider named it.
	Model string
	// Content is the answer's blocks.
	Content []Block
	// StopReason is why it ended.
	StopReason StopReason
	// StopSequence is the stop sequence that ended it, with StopSequence.
	StopSequence string
	// Usage is what the provider reported, normalized.
	Usage billing.Usage
	// UsageReported is false when the provider reported no usage.
	UsageReported bool
}

// EventKind is what a stream event reports.
type EventKind uint8

// Kinds of stream events, in the order a stream has them: one start,
// then for each block a block start, deltas and a block stop (blocks may
// interleave only by index), then one stop. An error may come anywhere
// and ends the stream.
const (
	// EventStart starts the message: Event.ID, Event.Model and the usage
	// known so far (the prompt's, on Anthropic).
	EventStart EventKind = iota + 1
	// EventBlockStart starts block Event.Index: Event.Block says its kind
	// and, for a tool use, its ToolID and ToolName.
	EventBlockStart
	// EventDelta adds Event.Text to block Event.Index, as Event.Delta says.
	EventDelta
	// EventBlockStop ends block Event.Index.
	EventBlockStop
	// EventStop ends the message: Event.StopReason and the final usage.
	EventStop
	// EventError ends the stream with Event.Err.
	EventError
)

// DeltaKind is what a delta adds to its block.
type DeltaKind uint8

// Kinds of deltas.
const (
	// DeltaText adds text to a text block.
	DeltaText DeltaKind = iota + 1
	// DeltaJSON adds a fragment of a tool use's arguments, in order.
	DeltaJSON
	// DeltaThinking adds text to a thinking block.
	DeltaThinking
	// DeltaSignature sets a thinking block's signature.
	DeltaSignature
)

// Event is one stream event. Decoders fill one Event per call and reuse
// it: Text aliases the decoder's buffer and is valid until the next call,
// so that translating an event allocates nothing in steady state.
type Event struct {
	// Kind says which of the other fields are set.
	Kind EventKind
	// Index is the block an EventBlockStart, EventDelta or EventBlockStop
	// is about, counted from 0 in the order blocks start.
	Index int
	// Block is the block an EventBlockStart starts (Kind, ToolID,
	// ToolName, and Data for redacted thinking).
	Block Block
	// Delta is what an EventDelta adds.
	Delta DeltaKind
	// Text is the delta's text, JSON fragment or signature.
	Text []byte
	// ID and Model are the answer's, on EventStart.
	ID, Model string
	// StopReason and StopSequence are why the message ended, on EventStop.
	StopReason   StopReason
	StopSequence string
	// Usage is the usage reported so far, cumulative, on EventStart and
	// EventStop; HasUsage says whether the provider reported any.
	Usage    billing.Usage
	HasUsage bool
	// Err is why the stream ended, on EventError.
	Err *Error
}

// ErrorKind is the class of an error, which each protocol spells in its
// own way (OpenAI's error.type or code, Anthropic's error.type, Bedrock's
// x-amzn-ErrorType, Gemini's status).
type ErrorKind string

// Kinds of errors.
const (
	ErrInvalidRequest ErrorKind = "invalid_request"
	ErrAuthentication ErrorKind = "authentication"
	ErrPermission     ErrorKind = "permission"
	ErrNotFound       ErrorKind = "not_found"
	ErrTooLarge       ErrorKind = "request_too_large"
	ErrRateLimit      ErrorKind = "rate_limit"
	ErrOverloaded     ErrorKind = "overloaded"
	ErrServer         ErrorKind = "server"
	ErrTimeout        ErrorKind = "timeout"
	// ErrCut is a stream the provider ended before its last event.
	ErrCut ErrorKind = "stream_cut"
)

// Error is a failure of an exchange, from the provider or the gateway,
// in the neutral model; each client codec writes it in its protocol's
// shape and status.
type Error struct {
	// Status is the HTTP status to answer with (a stream already begun
	// carries the error as an event instead).
	Status int
	// Kind is the error's class.
	Kind ErrorKind
	// Message says what went wrong, for the client. A provider's message
	// is passed only after its secrets and account ids are removed.
	Message string
	// Param names the request parameter at fault, if one is.
	Param string
	// RetryAfter is how long the client should wait before retrying,
	// zero if the provider said nothing.
	RetryAfter time.Duration
}

// Error implements error.
func (e *Error) Error() string { return string(e.Kind) + ": " + e.Message }

// KindOf is the error kind an HTTP status stands for, in every dialect:
// 408 and 504 are timeouts, 503 and Anthropic's 529 an overloaded
// provider.
func KindOf(status int) ErrorKind {
	switch {
	case status == 401:
		return ErrAuthentication
	case status == 403:
		return ErrPermission
	case status == 404:
		return ErrNotFound
	case status == 413:
		return ErrTooLarge
	case status == 429:
		return ErrRateLimit
	case status == 503 || status == 529:
		return ErrOverloaded
	case status == 504 || status == 408:
		return ErrTimeout
	case status >= 500:
		return ErrServer
	default:
		return ErrInvalidRequest
	}
}
