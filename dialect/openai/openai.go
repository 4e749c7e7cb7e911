// Package openai is the dialect of OpenAI's Chat Completions protocol
// (POST /v1/chat/completions): as a client protocol, it reads chat
// requests and writes chat completions, chunks and errors; as a provider
// protocol, it writes chat requests and reads their answers, streams,
// usage and errors. Reasoning travels as reasoning_content, with
// Anthropic's signed thinking blocks in thinking_blocks (LiteLLM's
// spelling), so that a client can send them back on its next turn.
package openai

import "github.com/caddy-air/caddy-air/dialect"

// Path is the request path below a provider's base URL.
const Path = "/chat/completions"

// Codec converts between the neutral model and Chat Completions. Its zero
// value is ready to use.
type Codec struct{}

// finishReason is the Chat Completions finish_reason of a stop reason.
func finishReason(r dialect.StopReason) string {
	switch r {
	case dialect.StopMaxTokens:
		return "length"
	case dialect.StopToolUse:
		return "tool_calls"
	case dialect.StopRefusal:
		return "content_filter"
	default:
		return "stop"
	}
}

// stopReason is the stop reason of a finish_reason.
func stopReason(f string) dialect.StopReason {
	switch f {
	case "length":
		return dialect.StopMaxTokens
	case "tool_calls", "function_call":
		return dialect.StopToolUse
	case "content_filter":
		return dialect.StopRefusal
	default:
		return dialect.StopEnd
	}
}

// Interface guards.
var (
	_ dialect.ClientCodec   = Codec{}
	_ dialect.ProviderCodec = Codec{}
)
