// Package chatproxy is the pass-through engine behind POST
// /v1/chat/completions, POST /v1/messages, the OpenAI Responses API
// (/v1/responses) and the other OpenAI-shaped endpoints. It checks a
// client's request body, edits a few bytes of it (the model name, the
// stream_options.include_usage flag) and forwards it to a provider, then
// writes the provider's response back byte for byte while tapping the
// token usage out of it. Bodies are never re-marshalled; streams are
// forwarded one SSE event at a time through bounded, pooled buffers.
//
// The engine knows no wire protocol: a Call carries a dialect.Wire (one
// value per protocol, in its dialect package: openai.Wire,
// openai.TranscriptWire, anthropic.Wire, responses.Wire), which gives the
// error shape, the auth headers, whether a stream's usage must be asked
// for, and the tap that reads the answer's usage.
package chatproxy

import "unsafe"

// str views b as a string without copying. The string must not outlive b
// nor be used after b is modified.
func str(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }
