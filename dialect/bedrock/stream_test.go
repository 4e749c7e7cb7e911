package bedrock

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/caddy-air/caddy-air/billing"
	"github.com/caddy-air/caddy-air/dialect"
)

type obj = map[string]any

// decodeAll feeds stream to a decoder step bytes at a time and returns
// the events as text lines, End's included.
func decodeAll(stream []byte, step int) []string {
	d := Codec{}.NewStreamDecoder()
	var out []string
	var ev dialect.Event
	for len(stream) > 0 {
		n := min(step, len(stream))
		d.Feed(stream[:n])
		stream = stream[n:]
		for d.Next(&ev) {
			out = append(out, describe(&ev))
		}
	}
	if d.End(&ev) {
		out = append(out, describe(&ev))
	}
	return out
}

// describe writes an event as one line.
func describe(ev *dialect.Event) string {
	switch ev.Kind {
	case dialect.EventStart:
		return "start"
	case dialect.EventBlockStart:
		return fmt.Sprintf("block %d kind=%d id=%s name=%s data=%s", ev.Index, ev.Block.Kind, ev.Block.ToolID, ev.Block.ToolName, ev.Block.Data)
	case dialect.EventDelta:
		return fmt.Sprintf("delta %d kind=%d %q", ev.Index, ev.Delta, ev.Text)
	case dialect.EventBlockStop:
		return fmt.Sprintf("stop %d", ev.Index)
	case dialect.EventStop:
		return fmt.Sprintf("end %s seq=%q usage=%v %+v", ev.StopReason, ev.StopSequence, ev.HasUsage, ev.Usage)
	case dialect.EventError:
		return fmt.Sprintf("error %d %s %s", ev.Err.Status, ev.Err.Kind, ev.Err.Message)
	}
	return "?"
}

// toolStream is a stream with reasoning, text and two parallel tool
// calls whose argument fragments interleave.
func toolStream() []byte {
	var b bytes.Buffer
	for _, f := range [][]byte{
		EncodeEvent("messageStart", obj{"role": "assistant"}),
		EncodeEvent("contentBlockDelta", obj{"contentBlockIndex": 0, "delta": obj{"reasoningContent": obj{"text": "Let me \"think\"\n"}}}),
		EncodeEvent("contentBlockDelta", obj{"contentBlockIndex": 0, "delta": obj{"reasoningContent": obj{"signature": "sig-abc"}}}),
		EncodeEvent("contentBlockStop", obj{"contentBlockIndex": 0}),
		EncodeEvent("contentBlockDelta", obj{"contentBlockIndex": 1, "delta": obj{"text": "Checking."}, "p": "abcd"}),
		EncodeEvent("contentBlockStop", obj{"contentBlockIndex": 1}),
		EncodeEvent("contentBlockStart", obj{"contentBlockIndex": 2, "start": obj{"toolUse": obj{"toolUseId": "tooluse_A", "name": "weather"}}}),
		EncodeEvent("contentBlockStart", obj{"contentBlockIndex": 3, "start": obj{"toolUse": obj{"toolUseId": "tooluse_B", "name": "time"}}}),
		EncodeEvent("contentBlockDelta", obj{"contentBlockIndex": 2, "delta": obj{"toolUse": obj{"input": `{"ci`}}}),
		EncodeEvent("contentBlockDelta", obj{"contentBlockIndex": 3, "delta": obj{"toolUse": obj{"input": `{"tz":`}}}),
		EncodeEvent("contentBlockDelta", obj{"contentBlockIndex": 2, "delta": obj{"toolUse": obj{"input": `ty":"Paris"}`}}}),
		EncodeEvent("contentBlockDelta", obj{"contentBlockIndex": 3, "delta": obj{"toolUse": obj{"input": `"CET"}`}}}),
		EncodeEvent("contentBlockStop", obj{"contentBlockIndex": 2}),
		EncodeEvent("contentBlockStop", obj{"contentBlockIndex": 3}),
		EncodeEvent("messageStop", obj{"stopReason": "tool_use"}),
		EncodeEvent("metadata", obj{"usage": obj{"inputTokens": 12, "outputTokens": 30, "cacheReadInputTokens": 100, "cacheWriteInputTokens": 7, "totalTokens": 149}, "metrics": obj{"latencyMs": 5}}),
	} {
		b.Write(f)
	}
	return b.Bytes()
}

func TestStreamEvents(t *testing.T) {
	want := []string{
		"start",
		fmt.Sprintf("block 0 kind=%d id= name= data=", dialect.BlockThinking),
		fmt.Sprintf("delta 0 kind=%d %q", dialect.DeltaThinking, "Let me \"think\"\n"),
		fmt.Sprintf("delta 0 kind=%d %q", dialect.DeltaSignature, "sig-abc"),
		"stop 0",
		fmt.Sprintf("block 1 kind=%d id= name= data=", dialect.BlockText),
		fmt.Sprintf("delta 1 kind=%d %q", dialect.DeltaText, "Checking."),
		"stop 1",
		fmt.Sprintf("block 2 kind=%d id=tooluse_A name=weather data=", dialect.BlockToolUse),
		fmt.Sprintf("block 3 kind=%d id=tooluse_B name=time data=", dialect.BlockToolUse),
		fmt.Sprintf("delta 2 kind=%d %q", dialect.DeltaJSON, `{"ci`),
		fmt.Sprintf("delta 3 kind=%d %q", dialect.DeltaJSON, `{"tz":`),
		fmt.Sprintf("delta 2 kind=%d %q", dialect.DeltaJSON, `ty":"Paris"}`),
		fmt.Sprintf("delta 3 kind=%d %q", dialect.DeltaJSON, `"CET"}`),
		"stop 2",
		"stop 3",
		fmt.Sprintf("end tool_use seq=\"\" usage=true %+v", billing.Usage{Input: 12, Output: 30, CacheRead: 100, CacheCreation: 7}),
	}
	stream := toolStream()
	// Whole, byte by byte and in odd pieces: the events are the same.
	for _, step := range []int{len(stream), 1, 7, 100} {
		got := decodeAll(stream, step)
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("step %d:\ngot\n%s\nwant\n%s", step, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
}

func TestStreamCutAndFailures(t *testing.T) {
	full := toolStream()
	first := EncodeEvent("messageStart", obj{"role": "assistant"})
	second := EncodeEvent("contentBlockDelta", obj{"contentBlockIndex": 0, "delta": obj{"text": "Hi"}})
	corrupt := bytes.Clone(second)
	corrupt[len(corrupt)-8] ^= 0x20
	for i, tc := range []struct {
		stream []byte
		last   string
	}{
		// Cut between frames: after messageStop, before metadata.
		{full[:bytes.LastIndex(full, EncodeEvent("metadata", obj{"usage": obj{"inputTokens": 12, "outputTokens": 30, "cacheReadInputTokens": 100, "cacheWriteInputTokens": 7, "totalTokens": 149}, "metrics": obj{"latencyMs": 5}}))],
			"error 502 stream_cut bedrock stream ended before its last event"},
		{append(bytes.Clone(first), second...), "error 502 stream_cut bedrock stream ended before its last event"},
		// Cut inside a frame.
		{append(bytes.Clone(first), second[:len(second)-3]...), "error 502 stream_cut bedrock stream ended inside an event"},
		{first[:5], "error 502 stream_cut bedrock stream ended inside an event"},
		{nil, "error 502 stream_cut bedrock stream ended before its last event"},
		// An exception frame ends the stream with its error; End adds none.
		{append(bytes.Clone(first), EncodeException("throttlingException", "Too many requests")...), "error 429 rate_limit Too many requests"},
		{append(bytes.Clone(first), EncodeException("modelStreamErrorException", "model failed")...), "error 502 server model failed"},
		{append(bytes.Clone(first), EncodeException("somethingNewException", "new")...), "error 502 server new"},
		// A frame of the error message type carries its code and message in headers.
		{append(bytes.Clone(first), encodeErrorFrame("InternalFailure", "boom")...), "error 502 server InternalFailure: boom"},
		// A corrupt frame is a malformed event, and nothing after it counts.
		{append(append(bytes.Clone(first), corrupt...), full...), "error 502 server bedrock: event stream frame fails its checksum"},
		{append(bytes.Clone(first), EncodeEvent("contentBlockDelta", obj{"delta": obj{"text": "no index"}})...), "error 502 server bedrock: event has no valid contentBlockIndex"},
	} {
		got := decodeAll(tc.stream, 3)
		if len(got) == 0 || got[len(got)-1] != tc.last {
			t.Errorf("Test %d: events %q, want the last %q", i, got, tc.last)
		}
		if n := strings.Count(strings.Join(got, "\n"), "error "); n != 1 {
			t.Errorf("Test %d: %d errors, want exactly 1: %q", i, n, got)
		}
	}
}

func TestStreamStopSequence(t *testing.T) {
	var b bytes.Buffer
	b.Write(EncodeEvent("messageStart", obj{"role": "assistant"}))
	b.Write(EncodeEvent("messageStop", obj{"stopReason": "stop_sequence", "additionalModelResponseFields": obj{"stop_sequence": "END"}}))
	b.Write(EncodeEvent("metadata", obj{"usage": obj{"inputTokens": 1, "outputTokens": 2}}))
	got := decodeAll(b.Bytes(), 1000)
	if want := fmt.Sprintf("end stop_sequence seq=\"END\" usage=true %+v", billing.Usage{Input: 1, Output: 2}); got[len(got)-1] != want {
		t.Errorf("got %q, want %q", got[len(got)-1], want)
	}
}

// BenchmarkDecodeEvent decodes a text delta frame: fed, framed, checked
// and translated to an event.
func BenchmarkDecodeEvent(b *testing.B) {
	d := Codec{}.NewStreamDecoder()
	var ev dialect.Event
	d.Feed(EncodeEvent("messageStart", obj{"role": "assistant"}))
	d.Next(&ev)
	frame := EncodeEvent("contentBlockDelta", obj{"contentBlockIndex": 0, "delta": obj{"text": "Hello, \"world\"\n"}, "p": "abcdefghijklmnopqrstu"})
	b.SetBytes(int64(len(frame)))
	b.ReportAllocs()
	for b.Loop() {
		d.Feed(frame)
		for d.Next(&ev) {
		}
	}
}
