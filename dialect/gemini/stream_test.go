package gemini

import (
	"fmt"
	"strings"
	"testing"

	"github.com/caddy-air/caddy-air/dialect"
)

// decodeAll feeds stream step bytes at a time and returns the events as
// lines, End's included.
func decodeAll(stream string, step int) []string {
	d := Codec{}.NewStreamDecoder()
	var out []string
	var ev dialect.Event
	for len(stream) > 0 {
		n := min(step, len(stream))
		d.Feed([]byte(stream[:n]))
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

func describe(ev *dialect.Event) string {
	switch ev.Kind {
	case dialect.EventStart:
		return "start " + ev.ID + " " + ev.Model
	case dialect.EventBlockStart:
		return fmt.Sprintf("block %d kind=%d id=%s name=%s sig=%s", ev.Index, ev.Block.Kind, ev.Block.ToolID, ev.Block.ToolName, ev.Block.Signature)
	case dialect.EventDelta:
		return fmt.Sprintf("delta %d kind=%d %q", ev.Index, ev.Delta, ev.Text)
	case dialect.EventBlockStop:
		return fmt.Sprintf("stop %d", ev.Index)
	case dialect.EventStop:
		u := ev.Usage
		return fmt.Sprintf("end %s usage=%v {Input:%d CacheCreation:%d CacheCreation1h:%d CacheRead:%d Output:%d Reasoning:%d}",
			ev.StopReason, ev.HasUsage, u.Input, u.CacheCreation, u.CacheCreation1h, u.CacheRead, u.Output, u.Reasoning)
	case dialect.EventError:
		return fmt.Sprintf("error %d %s %s", ev.Err.Status, ev.Err.Kind, ev.Err.Message)
	}
	return "?"
}

const sseStream = "data: {\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"text\":\"Plan \\\"A\\\"\",\"thought\":true}]}}],\"modelVersion\":\"gemini-3-pro\",\"responseId\":\"r9\"}\r\n\r\n" +
	"data: {\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"text\":\"Hel\",\"thoughtSignature\":\"SIG-T\"}]}}],\"usageMetadata\":{\"promptTokenCount\":10},\"responseId\":\"r9\"}\r\n\r\n" +
	": a comment\r\n\r\n" +
	"data: {\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"text\":\"lo\\n\"},{\"functionCall\":{\"name\":\"weather\",\"args\":{\"city\":\"Paris\"}},\"thoughtSignature\":\"SIG-C\"},{\"functionCall\":{\"name\":\"clock\",\"args\":{}}}]}}],\"responseId\":\"r9\"}\r\n\r\n" +
	"data: {\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"text\":\"Bye.\"}]},\"finishReason\":\"STOP\"}],\"usageMetadata\":{\"promptTokenCount\":1000,\"candidatesTokenCount\":50,\"cachedContentTokenCount\":800,\"thoughtsTokenCount\":200,\"totalTokenCount\":1250},\"responseId\":\"r9\"}\r\n\r\n"

func TestStreamEvents(t *testing.T) {
	want := []string{
		"start r9 gemini-3-pro",
		fmt.Sprintf("block 0 kind=%d id= name= sig=", dialect.BlockThinking),
		fmt.Sprintf("delta 0 kind=%d %q", dialect.DeltaThinking, `Plan "A"`),
		fmt.Sprintf("delta 0 kind=%d %q", dialect.DeltaSignature, "SIG-T"),
		"stop 0",
		fmt.Sprintf("block 1 kind=%d id= name= sig=", dialect.BlockText),
		fmt.Sprintf("delta 1 kind=%d %q", dialect.DeltaText, "Hel"),
		fmt.Sprintf("delta 1 kind=%d %q", dialect.DeltaText, "lo\n"),
		"stop 1",
		fmt.Sprintf("block 2 kind=%d id=call_r9_0__ts_U0lHLUM name=weather sig=SIG-C", dialect.BlockToolUse),
		fmt.Sprintf("delta 2 kind=%d %q", dialect.DeltaJSON, `{"city":"Paris"}`),
		"stop 2",
		fmt.Sprintf("block 3 kind=%d id=call_r9_1 name=clock sig=", dialect.BlockToolUse),
		fmt.Sprintf("delta 3 kind=%d %q", dialect.DeltaJSON, `{}`),
		"stop 3",
		// The last chunk carries text, the finish reason and the usage.
		fmt.Sprintf("block 4 kind=%d id= name= sig=", dialect.BlockText),
		fmt.Sprintf("delta 4 kind=%d %q", dialect.DeltaText, "Bye."),
		"stop 4",
		"end tool_use usage=true {Input:200 CacheCreation:0 CacheCreation1h:0 CacheRead:800 Output:250 Reasoning:200}",
	}
	for _, step := range []int{len(sseStream), 1, 13} {
		got := decodeAll(sseStream, step)
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("step %d:\ngot\n%s\nwant\n%s", step, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
	// LF line ends and a data field split over two lines read the same.
	lf := strings.ReplaceAll(sseStream, "\r\n", "\n")
	if got := decodeAll(lf, 7); len(got) != len(want) || got[len(got)-1] != want[len(want)-1] {
		t.Errorf("LF stream: %q", got)
	}
	multi := "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"a\"}]},\ndata: \"finishReason\":\"MAX_TOKENS\"}]}\n\n"
	if got := decodeAll(multi, 5); got[len(got)-1] != "end max_tokens usage=false {Input:0 CacheCreation:0 CacheCreation1h:0 CacheRead:0 Output:0 Reasoning:0}" {
		t.Errorf("multi-line data: %q", got)
	}
}

func TestStreamCutAndErrors(t *testing.T) {
	i := strings.LastIndex(sseStream, "data: ")
	for n, tc := range []struct{ stream, last string }{
		// Without its last chunk the stream is cut: no usage, no finish.
		{sseStream[:i], "error 502 stream_cut gemini stream ended before its last chunk"},
		{sseStream[:i+40], "error 502 stream_cut gemini stream ended inside an event"},
		{"", "error 502 stream_cut gemini stream ended before its last chunk"},
		{sseStream[:i] + "data: {\"error\":{\"code\":503,\"message\":\"overloaded\",\"status\":\"UNAVAILABLE\"}}\r\n\r\n", "error 503 overloaded overloaded"},
		{sseStream[:i] + "data: {not json\r\n\r\n" + sseStream[i:], "error 502 server gemini: a stream chunk is not valid JSON"},
	} {
		got := decodeAll(tc.stream, 11)
		if len(got) == 0 || got[len(got)-1] != tc.last {
			t.Errorf("Test %d: %q, want the last %q", n, got, tc.last)
		}
		if c := strings.Count(strings.Join(got, "\n"), "error "); c != 1 {
			t.Errorf("Test %d: %d errors", n, c)
		}
	}
}

// BenchmarkDecodeEvent decodes one SSE chunk with a text part.
func BenchmarkDecodeEvent(b *testing.B) {
	d := Codec{}.NewStreamDecoder()
	var ev dialect.Event
	d.Feed([]byte("data: {\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"text\":\"Hi\"}]}}],\"responseId\":\"r\"}\r\n\r\n"))
	for d.Next(&ev) {
	}
	chunk := []byte("data: {\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"text\":\"Hello, \\\"world\\\"\\n\"}]},\"index\":0}],\"usageMetadata\":{\"promptTokenCount\":9,\"candidatesTokenCount\":3,\"totalTokenCount\":12},\"modelVersion\":\"gemini-2.5-flash\",\"responseId\":\"r\"}\r\n\r\n")
	b.SetBytes(int64(len(chunk)))
	b.ReportAllocs()
	for b.Loop() {
		d.Feed(chunk)
		for d.Next(&ev) {
		}
	}
}

// A stream whose usage comes after the finish reason: every chunk has the
// running usage of the prompt, and the last chunk, without candidates,
// the whole usage (thoughts included). The stop comes at the stream's
// end, with the last usage; parts after the finish reason are not read.
func TestStreamUsageAfterFinish(t *testing.T) {
	stream := "data: {\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"text\":\"hm\",\"thought\":true}]}}],\"usageMetadata\":{\"promptTokenCount\":100,\"totalTokenCount\":100},\"responseId\":\"r7\"}\r\n\r\n" +
		"data: {\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"text\":\"Hi\"}]},\"finishReason\":\"MAX_TOKENS\"}],\"usageMetadata\":{\"promptTokenCount\":100,\"totalTokenCount\":100},\"responseId\":\"r7\"}\r\n\r\n" +
		"data: {\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"text\":\"late\"}]}}],\"responseId\":\"r7\"}\r\n\r\n" +
		"data: {\"usageMetadata\":{\"promptTokenCount\":100,\"candidatesTokenCount\":7,\"cachedContentTokenCount\":64,\"thoughtsTokenCount\":30,\"totalTokenCount\":137},\"responseId\":\"r7\"}\r\n\r\n"
	want := []string{
		"start r7 ",
		fmt.Sprintf("block 0 kind=%d id= name= sig=", dialect.BlockThinking),
		fmt.Sprintf("delta 0 kind=%d %q", dialect.DeltaThinking, "hm"),
		"stop 0",
		fmt.Sprintf("block 1 kind=%d id= name= sig=", dialect.BlockText),
		fmt.Sprintf("delta 1 kind=%d %q", dialect.DeltaText, "Hi"),
		"stop 1",
		"end max_tokens usage=true {Input:36 CacheCreation:0 CacheCreation1h:0 CacheRead:64 Output:37 Reasoning:30}",
	}
	for _, step := range []int{len(stream), 1, 9} {
		if got := decodeAll(stream, step); strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("step %d:\ngot\n%s\nwant\n%s", step, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
	// Ending after the finish reason's chunk is an end, with the usage
	// known by then; ending inside the usage chunk is a cut.
	i := strings.LastIndex(stream, "data: ")
	if got := decodeAll(stream[:i], 5); got[len(got)-1] != "end max_tokens usage=true {Input:100 CacheCreation:0 CacheCreation1h:0 CacheRead:0 Output:0 Reasoning:0}" {
		t.Errorf("without the usage chunk: %q", got)
	}
	if got := decodeAll(stream[:i+30], 5); got[len(got)-1] != "error 502 stream_cut gemini stream ended inside an event" {
		t.Errorf("cut inside the usage chunk: %q", got)
	}
	// An error chunk after the finish reason still fails the stream.
	if got := decodeAll(stream[:i]+"data: {\"error\":{\"code\":500,\"message\":\"boom\",\"status\":\"INTERNAL\"}}\r\n\r\n", 5); got[len(got)-1] != "error 502 server boom" {
		t.Errorf("error after the finish reason: %q", got)
	}
}
