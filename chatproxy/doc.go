// Package chatproxy is the proxy engine behind POST /v1/chat/completions
// (OpenAI protocol) and POST /v1/messages (Anthropic protocol). It checks a
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
