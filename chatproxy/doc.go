// Package chatproxy is the proxy engine behind POST /v1/chat/completions
// (OpenAI protocol), POST /v1/messages (Anthropic protocol) and the
// OpenAI Responses API (/v1/responses, see responses.go). It checks a
// client's request body, edits a few bytes of it (the model name, the
// stream_options.include_usage flag) and forwards it to a provider, then
// writes the provider's response back byte for byte while tapping the token
// usage out of it. Bodies are never re-marshalled; streams are forwarded one
// SSE event at a time through bounded, pooled buffers.
package chatproxy

import "unsafe"

// Protocol is the wire protocol of a chat request.
type Protocol int

// Protocols served by the proxy.
const (
	// OpenAI is the chat completions protocol (/v1/chat/completions).
	OpenAI Protocol = iota
	// Anthropic is the Messages protocol (/v1/messages).
	Anthropic
	// Responses is OpenAI's Responses API (/v1/responses), spoken by
	// providers of the OpenAI protocol.
	Responses
	// Transcript is OpenAI's audio transcription and translation API,
	// spoken by providers of the OpenAI protocol: its streams are
	// transcript.text.delta events ended by transcript.text.done, which
	// carries the usage (transcript.go).
	Transcript
)

// String returns the protocol name used in provider configuration.
func (p Protocol) String() string {
	if p == Anthropic {
		return "anthropic"
	}
	return "openai"
}

// str views b as a string without copying. The string must not outlive b
// nor be used after b is modified.
func str(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }
