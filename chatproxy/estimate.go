package chatproxy

import (
	"github.com/caddy-air/caddy-air/billing"
	"github.com/tidwall/gjson"
)

// The estimation heuristic, used only when an upstream reports no usage (or
// the client left before it did): one token per 4 bytes of text, rounded up,
// at least 1 token each way.
//
// Prompt text (sized as the request is inspected, in reqscan.go) is the raw
// (JSON-escaped) length of every message's text,
// thinking, tool call and tool input, plus the system prompt and the tool
// definitions, plus messageOverhead bytes per message. A media block (image,
// audio, file, document) counts as mediaBlockBytes, whatever its size: a
// base64 image is billed by the upstream per tile, not per byte.
//
// Output text is the raw length of the content, reasoning and tool call
// text actually delivered to the client. A non-streaming body cut short (or
// an event too large to parse) counts all its delivered bytes instead.
const (
	bytesPerToken   = 4
	messageOverhead = 16
	mediaBlockBytes = 4096
)

// estimate turns byte counts into a usage estimate.
func estimate(promptBytes, outputBytes int64) billing.Usage {
	return billing.Usage{Input: tokens(promptBytes), Output: tokens(outputBytes)}
}

// tokens estimates the tokens of n bytes of text, at least 1.
func tokens(n int64) int64 {
	return max((n+bytesPerToken-1)/bytesPerToken, 1)
}

// textLen is the raw length of a JSON string without its quotes, or the raw
// length of any other non-null value.
func textLen(r gjson.Result) int {
	if r.Type == gjson.String {
		return max(len(r.Raw)-2, 0)
	}
	return rawLen(r)
}

// rawLen is the raw length of a value, zero when missing or null.
func rawLen(r gjson.Result) int {
	if r.Type == gjson.Null {
		return 0
	}
	return len(r.Raw)
}

// openAIOutputBytes sizes the text of a whole chat completion: the message
// of each choice. (A stream's chunks are sized by scanChunk.)
func openAIOutputBytes(resp gjson.Result) int {
	n := 0
	resp.Get("choices").ForEach(func(_, c gjson.Result) bool {
		n += openAIMessageBytes(c.Get("message"))
		return true
	})
	return n
}

// openAIMessageBytes sizes a message or delta: its content, reasoning and
// tool call names and arguments. It reads the message in one pass.
func openAIMessageBytes(m gjson.Result) int {
	n := 0
	m.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "content", "reasoning_content", "reasoning":
			n += textLen(v)
		case "tool_calls":
			v.ForEach(func(_, tc gjson.Result) bool {
				f := tc.Get("function")
				n += textLen(f.Get("name")) + textLen(f.Get("arguments"))
				return true
			})
		}
		return true
	})
	return n
}

// anthropicDeltaBytes sizes the text of a content_block_start or
// content_block_delta event.
func anthropicDeltaBytes(ev gjson.Result) int {
	if b := ev.Get("content_block"); b.Exists() {
		return textLen(b.Get("name")) + textLen(b.Get("text")) + textLen(b.Get("thinking"))
	}
	d := ev.Get("delta")
	return textLen(d.Get("text")) + textLen(d.Get("thinking")) + textLen(d.Get("partial_json"))
}

// anthropicOutputBytes sizes the content of a whole Messages response.
func anthropicOutputBytes(resp gjson.Result) int {
	n := 0
	resp.Get("content").ForEach(func(_, b gjson.Result) bool {
		if b.Get("type").Str == "tool_use" {
			n += textLen(b.Get("name")) + rawLen(b.Get("input"))
		} else {
			n += textLen(b.Get("text")) + textLen(b.Get("thinking"))
		}
		return true
	})
	return n
}

// EstimateRequest is what in is expected to use, for budget admission
// before the upstream answers: its prompt estimate, and max_tokens of
// output or, when the request sets none, ceiling (the model's
// max_output_tokens), at most billing.MaxTokenCount.
func EstimateRequest(in Inspected, ceiling int64) billing.Usage {
	u := estimate(int64(in.PromptBytes), 0)
	u.Characters = in.Characters   // a speech input, for a character price
	u.AudioMillis = in.AudioMillis // a transcription's audio, for a per-second price
	u.Output = in.MaxTokens
	if u.Output <= 0 {
		u.Output = ceiling
	}
	return u.Bounded()
}
