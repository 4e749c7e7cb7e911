package openai

import (
	"github.com/tidwall/gjson"

	"github.com/caddy-air/caddy-air/billing"
	"github.com/caddy-air/caddy-air/dialect"
	"github.com/caddy-air/caddy-air/dialect/internal/tapcore"
	"github.com/caddy-air/caddy-air/jsonlimit"
)

// Transcript stream events.
const (
	evTranscriptDelta = "transcript.text.delta"
	evTranscriptDone  = "transcript.text.done"
)

// transcriptTap is the usage tap of a transcription (dialect.Tap).
type transcriptTap struct {
	tapcore.Core
}

// Release implements dialect.Tap.
func (t *transcriptTap) Release() { transcriptTaps.Put(t) }

// reset readies t for a new answer.
func (t *transcriptTap) reset(cfg dialect.TapConfig) { t.Core.Reset(cfg) }

// Event implements dialect.Tap: it collects the output size of a delta
// event, and the usage of the done event, which ends the stream. The
// events are forwarded as they are, an error event included.
func (t *transcriptTap) Event(ev []byte) []byte {
	payload, _, _, ok := jsonData(&t.Core, ev)
	if !ok {
		return ev
	}
	if jsonlimit.Check(payload, t.Depth()) != nil {
		t.OutBytes += int64(len(payload))
		return ev
	}
	root := gjson.ParseBytes(payload)
	switch root.Get("type").Str {
	case evTranscriptDelta:
		t.OutBytes += int64(len(root.Get("delta").Str))
	case evTranscriptDone:
		t.Term = true
		if u, ok := TranscriptUsage(root.Get("usage")); ok {
			t.Usage, t.Reported, t.Started = u, true, true
		}
	case "error":
		t.UpstreamErr = true
	}
	return ev
}

// Body implements dialect.Tap: a transcription's JSON body is read as a
// chat completion's.
func (t *transcriptTap) Body(b []byte, complete bool) { body(&t.Core, b, complete) }

// Tail implements dialect.Tap.
func (t *transcriptTap) Tail(tail []byte) { t.TailUsage(tail, NormalizeUsage) }

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
