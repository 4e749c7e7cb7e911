package chatproxy

import (
	"github.com/tidwall/gjson"

	"github.com/caddy-air/caddy-air/billing"
	"github.com/caddy-air/caddy-air/jsonlimit"
)

// Transcript stream events.
const (
	evTranscriptDelta = "transcript.text.delta"
	evTranscriptDone  = "transcript.text.done"
)

// transcriptEvent reads one event of a transcription stream: a delta's
// text counts as output, the done event ends the stream with its usage,
// an error event is the upstream's error.
func (t *tap) transcriptEvent(payload []byte) {
	if jsonlimit.Check(payload, jsonlimit.OrDefault(t.maxDepth)) != nil {
		t.outBytes += int64(len(payload))
		return
	}
	root := gjson.ParseBytes(payload)
	switch root.Get("type").Str {
	case evTranscriptDelta:
		t.outBytes += int64(len(root.Get("delta").Str))
	case evTranscriptDone:
		t.terminal = true
		if u, ok := TranscriptUsage(root.Get("usage")); ok {
			t.usage, t.reported, t.started = u, true, true
		}
	case "error":
		t.upstreamError = true
	}
}

// TranscriptUsage reads a transcription's usage object: {"type":
// "tokens", "input_tokens", "input_token_details": {"audio_tokens"},
// "output_tokens"}, or {"type": "duration", "seconds"}; ok is false for
// anything else.
func TranscriptUsage(u gjson.Result) (billing.Usage, bool) {
	var out billing.Usage
	switch u.Get("type").Str {
	case "tokens":
		out.Input, out.Output = u.Get("input_tokens").Int(), u.Get("output_tokens").Int()
		out.AudioInput = min(u.Get("input_token_details.audio_tokens").Int(), out.Input)
	case "duration":
		s := u.Get("seconds")
		if s.Type != gjson.Number {
			return out, false
		}
		out.AudioMillis = int64(s.Float()*1000 + 0.5)
	default:
		return out, false
	}
	return out.Bounded(), true
}
