// Package anthropic is the dialect of Anthropic's Messages protocol
// (POST /v1/messages): as a client protocol, it reads Messages requests
// and writes messages, their event streams and errors; as a provider
// protocol, it writes Messages requests and reads their answers, streams,
// usage and errors.
package anthropic

import "github.com/caddy-air/caddy-air/dialect"

// Path is the request path below a provider's base URL.
const Path = "/messages"

// DefaultMaxTokens is the max_tokens sent, when a translated request has
// none and its model sets no ceiling: Messages requires one.
const DefaultMaxTokens = 4096

// minThinkingBudget is the smallest budget_tokens Anthropic accepts.
const minThinkingBudget = 1024

// Codec converts between the neutral model and Messages. Its zero value is
// ready to use.
type Codec struct{}

// stopReason reads a stop_reason; the neutral names are Anthropic's.
func stopReason(s string) dialect.StopReason {
	switch s {
	case "max_tokens", "model_context_window_exceeded":
		return dialect.StopMaxTokens
	case "stop_sequence":
		return dialect.StopSequence
	case "tool_use":
		return dialect.StopToolUse
	case "refusal":
		return dialect.StopRefusal
	case "pause_turn":
		return dialect.StopPause
	default:
		return dialect.StopEnd
	}
}

// Interface guards.
var (
	_ dialect.ClientCodec   = Codec{}
	_ dialect.ProviderCodec = Codec{}
)
