package bedrock

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
)

// streamChunk is how many bytes of text or tool input one delta carries.
const streamChunk = 4

// EncodeEvent returns one ConverseStream event frame: eventType with
// payload, a JSON object, encoded with the SDK's event stream encoder.
func EncodeEvent(eventType string, payload any) []byte {
	return encodeFrame(eventstream.Headers{
		{Name: ":event-type", Value: eventstream.StringValue(eventType)},
		{Name: ":content-type", Value: eventstream.StringValue("application/json")},
		{Name: ":message-type", Value: eventstream.StringValue("event")},
	}, payload)
}

// EncodeException returns an exception frame of exceptionType (such as
// throttlingException) with message.
func EncodeException(exceptionType, message string) []byte {
	return encodeFrame(eventstream.Headers{
		{Name: ":exception-type", Value: eventstream.StringValue(exceptionType)},
		{Name: ":content-type", Value: eventstream.StringValue("application/json")},
		{Name: ":message-type", Value: eventstream.StringValue("exception")},
	}, map[string]string{"message": message})
}

// encodeFrame encodes one frame.
func encodeFrame(h eventstream.Headers, payload any) []byte {
	p, _ := json.Marshal(payload)
	var b bytes.Buffer
	_ = eventstream.NewEncoder().Encode(&b, eventstream.Message{Headers: h, Payload: p})
	return b.Bytes()
}

// streamFrames are the frames of a's ConverseStream answer.
func streamFrames(a mockAnswer) [][]byte {
	type obj = map[string]any
	// p pads events as Bedrock does, against length side channels.
	const pad = "abcdefghijklmnop"
	frames := [][]byte{EncodeEvent("messageStart", obj{"role": "assistant", "p": pad})}
	delta := func(i int, d obj) {
		frames = append(frames, EncodeEvent("contentBlockDelta", obj{"contentBlockIndex": i, "delta": d, "p": pad}))
	}
	for i, b := range a.blocks {
		switch {
		case b.Text != nil:
			for _, c := range chunks(*b.Text) {
				delta(i, obj{"text": c})
			}
		case b.ToolUse != nil:
			frames = append(frames, EncodeEvent("contentBlockStart", obj{"contentBlockIndex": i, "p": pad,
				"start": obj{"toolUse": obj{"toolUseId": b.ToolUse.ToolUseID, "name": b.ToolUse.Name}}}))
			for _, c := range chunks(string(b.ToolUse.Input)) {
				delta(i, obj{"toolUse": obj{"input": c}})
			}
		case b.ReasoningContent != nil:
			rt := b.ReasoningContent.ReasoningText
			for _, c := range chunks(rt.Text) {
				delta(i, obj{"reasoningContent": obj{"text": c}})
			}
			delta(i, obj{"reasoningContent": obj{"signature": rt.Signature}})
		}
		frames = append(frames, EncodeEvent("contentBlockStop", obj{"contentBlockIndex": i, "p": pad}))
	}
	frames = append(frames,
		EncodeEvent("messageStop", obj{"stopReason": a.stop, "p": pad}),
		EncodeEvent("metadata", obj{"usage": usageJSON(a.usage), "metrics": obj{"latencyMs": 1}, "p": pad}))
	return frames
}

// chunks splits s into pieces of streamChunk bytes, keeping runes whole.
func chunks(s string) []string {
	var out []string
	for len(s) > 0 {
		n := min(streamChunk, len(s))
		for n < len(s) && !utf8RuneStart(s[n]) {
			n++
		}
		out = append(out, s[:n])
		s = s[n:]
	}
	return out
}

// utf8RuneStart reports whether b starts a rune.
func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }

// writeStream writes a's ConverseStream answer, failing as prompt asks.
func (s *Server) writeStream(w http.ResponseWriter, a mockAnswer, prompt string) {
	frames := streamFrames(a)
	w.Header().Set("Content-Type", StreamContentType)
	w.WriteHeader(http.StatusOK)
	flush := func() {
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
	}
	for i, f := range frames {
		switch {
		case i == 2 && strings.Contains(prompt, "mock:exception"):
			w.Write(EncodeException("throttlingException", "Too many requests, please wait before trying again."))
			flush()
			return
		case i == 2 && strings.Contains(prompt, "mock:cut-between"):
			return
		case i == 2 && strings.Contains(prompt, "mock:cut-frame"):
			w.Write(f[:len(f)/2])
			flush()
			return
		}
		w.Write(f)
		flush()
	}
}
