// Package chatproxy is the proxy engine behind POST /v1/chat/completions
// (OpenAI protocol) and POST /v1/messages (Anthropic protocol). It checks a
// client's request body, edits a few bytes of it (the model name, the
// stream_options.include_usage flag) and forwards it to a provider, then
// writes the provider's response back byte for byte while tapping the token
// usage out of it. Bodies are never re-marshalled; streams are forwarded one
// SSE event at a time through bounded, pooled buffers.
package chatproxy

import (
	"unsafe"

	"github.com/caddy-air/caddy-air/jsonlimit"
)

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

// depthLimit returns the nesting limit n, or jsonlimit.DefaultMaxDepth when
// n is zero or less.
func depthLimit(n int) int {
	if n <= 0 {
		return jsonlimit.DefaultMaxDepth
	}
	return n
}

// str views b as a string without copying. The string must not outlive b
// nor be used after b is modified.
func str(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }
