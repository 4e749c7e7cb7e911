package dialect

import (
	"strings"

	"github.com/caddy-air/caddy-air/apierror"
	"github.com/caddy-air/caddy-air/billing"
)

// Wire is what the pass-through engine (package chatproxy) needs of a wire
// protocol: a client's request of that protocol goes to a provider that
// speaks it, and its answer comes back byte for byte while the Wire's tap
// reads its usage. The engine holds Wire values and never compares them:
// all it knows of a protocol comes through these methods. One value per
// protocol lives in its dialect package (openai.Wire, openai.TranscriptWire,
// anthropic.Wire, responses.Wire).
type Wire interface {
	// Auth is the provider protocol whose key headers an upstream request
	// of this wire carries (see package authn): "openai" or "anthropic".
	Auth() string
	// Operation names the wire's endpoint in spans and logs, when the
	// caller names none: chat, messages or responses.
	Operation() string
	// ErrorShape is the shape of the errors the wire's clients read.
	ErrorShape() apierror.Shape
	// StreamUsage reports whether a stream of this wire reports its usage
	// only when asked (chat completions' stream_options.include_usage),
	// so that the gateway asks for it and strips it from the answer of a
	// client that did not.
	StreamUsage() bool
	// NewTap returns the usage tap of one answer. The caller calls its
	// Release once it has read its Result.
	NewTap(TapConfig) Tap
}

// TapConfig configures a Tap.
type TapConfig struct {
	// Strip removes from a stream the usage the gateway injected (see
	// Wire.StreamUsage).
	Strip bool
	// MaxDepth bounds the nesting of the JSON the tap reads; zero means
	// jsonlimit.DefaultMaxDepth. Deeper chunks and bodies are forwarded
	// untouched and counted as output, like any other it cannot read.
	MaxDepth int
	// Meta, when set, collects the answer's model and finish reasons for
	// the attempt's span.
	Meta *Meta
}

// Tap follows one answer as the engine forwards it and collects its token
// usage, reported or estimated. It is fed either a stream's events or a
// body, never both. It does not allocate per event in steady state.
type Tap interface {
	// Event processes one whole SSE event and returns the bytes to
	// forward: ev itself, ev edited in place, nil to drop it, or, for the
	// upstream's error event, that event scrubbed of account ids and
	// credentials.
	Event(ev []byte) []byte
	// Piece processes a piece of an event too large to hold whole: it is
	// forwarded as it is and counted as output.
	Piece(p []byte)
	// Body collects usage and output size from a complete (or, when
	// complete is false, truncated) non-streaming body.
	Body(b []byte, complete bool)
	// Large is fed the bytes of a body too large to hold, as they are
	// forwarded, then called once with final set.
	Large(p []byte, final bool)
	// Tail finds the usage in the last bytes of a body too large to hold.
	Tail(tail []byte)
	// SetOutBytes sets the output size of a body too large to hold.
	SetOutBytes(n int64)
	// Terminal reports that the stream's final event went by (OpenAI's
	// [DONE], Anthropic's message_stop, a Responses terminal event): a
	// stream that ends without it was cut.
	Terminal() bool
	// UpstreamError reports that the answer carried the upstream's error
	// event (or, in a body, an error object).
	UpstreamError() bool
	// Result returns the answer's usage and how it was obtained. cut means
	// the answer ended early (client gone, timeout, upstream failure);
	// gone means the client left; promptBytes sizes the prompt of an
	// estimate.
	Result(promptBytes int, cut, gone bool) TapResult
	// Release returns the tap to its pool; it must not be used after.
	Release()
}

// TapResult is what a Tap read of an answer.
type TapResult struct {
	// Usage is the answer's usage, normalised.
	Usage billing.Usage
	// Source says how Usage was obtained.
	Source billing.Source
	// ServiceTier is the service tier the answer reported.
	ServiceTier string
	// ResponseID and ResponseStatus are a Responses answer's id and last
	// status.
	ResponseID, ResponseStatus string
}

// Meta is what a traced attempt's answer says of itself: the model that
// answered and why it stopped. Its strings are copies: the answer's bytes
// are reused.
type Meta struct {
	// Model is the answering model.
	Model string
	// Finish holds the finish (stop) reasons, in order.
	Finish []string
}

// SetModel records the answering model, once.
func (m *Meta) SetModel(s string) {
	if m.Model == "" && s != "" {
		m.Model = strings.Clone(s)
	}
}

// AddFinish records a finish reason.
func (m *Meta) AddFinish(s string) {
	if s != "" {
		m.Finish = append(m.Finish, strings.Clone(s))
	}
}

// accountHeaders are provider response headers that name the operator's
// account with the provider (OpenAI's organization and project ids,
// Anthropic's organization id): clients of the gateway are not the
// account's holders.
var accountHeaders = map[string]bool{
	"Openai-Organization":       true,
	"Openai-Project":            true,
	"Anthropic-Organization-Id": true,
}

// KeepHeader reports whether a provider's own response header, named in
// canonical form, may reach the client: the openai-* and anthropic-*
// headers (rate limits, processing time, versions), whichever wire the
// answer came on (an OpenAI-compatible front of Claude sends Anthropic's),
// but for those naming the operator's account. Headers every provider
// shares (content type, Retry-After, x-ratelimit-*, request ids) are the
// engine's to copy.
func KeepHeader(name string) bool {
	if accountHeaders[name] {
		return false
	}
	return strings.HasPrefix(name, "Openai-") || strings.HasPrefix(name, "Anthropic-")
}
