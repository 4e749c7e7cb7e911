package dialect

import (
	"github.com/tidwall/gjson"

	"github.com/caddy-air/caddy-air/billing"
)

// The estimation heuristic, used only when an upstream reports no usage (or
// the client left before it did): one token per 4 bytes of text, rounded up,
// at least 1 token each way.
//
// Prompt text (sized as the request is inspected) is the raw (JSON-escaped)
// length of every message's text, thinking, tool call and tool input, plus
// the system prompt and the tool definitions, plus MessageOverhead bytes
// per message. A media block (image, audio, file, document) counts as
// MediaBlockBytes, whatever its size: a base64 image is billed by the
// upstream per tile, not per byte.
//
// Output text is the raw length of the content, reasoning and tool call
// text actually delivered to the client. A non-streaming body cut short (or
// an event too large to parse) counts all its delivered bytes instead.
const (
	// BytesPerToken is the bytes of text estimated as one token.
	BytesPerToken = 4
	// MessageOverhead is the bytes a message counts beyond its text.
	MessageOverhead = 16
	// MediaBlockBytes is the bytes a media block counts, whatever its size.
	MediaBlockBytes = 4096
)

// Estimate turns byte counts into a usage estimate.
func Estimate(promptBytes, outputBytes int64) billing.Usage {
	return billing.Usage{Input: EstimateTokens(promptBytes), Output: EstimateTokens(outputBytes)}
}

// EstimateTokens estimates the tokens of n bytes of text, at least 1.
func EstimateTokens(n int64) int64 {
	return max((n+BytesPerToken-1)/BytesPerToken, 1)
}

// TextLen is the raw length of a JSON string without its quotes, or the raw
// length of any other non-null value.
func TextLen(r gjson.Result) int {
	if r.Type == gjson.String {
		return max(len(r.Raw)-2, 0)
	}
	return RawLen(r)
}

// RawLen is the raw length of a value, zero when missing or null.
func RawLen(r gjson.Result) int {
	if r.Type == gjson.Null {
		return 0
	}
	return len(r.Raw)
}

// EstimateRequest is what in is expected to use, for budget admission
// before the upstream answers: its prompt estimate, and max_tokens of
// output or, when the request sets none, ceiling (the model's
// max_output_tokens), at most billing.MaxTokenCount.
func EstimateRequest(in Inspected, ceiling int64) billing.Usage {
	u := Estimate(int64(in.PromptBytes), 0)
	u.Characters = in.Characters   // a speech input, for a character price
	u.AudioMillis = in.AudioMillis // a transcription's audio, for a per-second price
	u.Output = in.MaxTokens
	if u.Output <= 0 {
		u.Output = ceiling
	}
	return u.Bounded()
}
