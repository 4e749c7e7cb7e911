package tapcore_test

import (
	"github.com/caddy-air/caddy-air/billing"
	"github.com/caddy-air/caddy-air/dialect"
	"github.com/caddy-air/caddy-air/dialect/anthropic"
	"github.com/caddy-air/caddy-air/dialect/internal/tapcore"
	"github.com/caddy-air/caddy-air/dialect/openai"
	"github.com/caddy-air/caddy-air/dialect/responses"
	"strings"
	"testing"
)

// The dialects' taps, driven as the engine drives them (dialect.Tap), with
// their shared state read through tapcore.Core.State. These tests moved
// here from chatproxy with the taps.

// tap adapts a dialect.Tap to the reads these tests make.
type tap struct {
	proto    dialect.Wire
	strip    bool
	maxDepth int
	meta     *dialect.Meta
	t        dialect.Tap
}

// get returns the tap, made on first use.
func (x *tap) get() dialect.Tap {
	if x.t == nil {
		p := x.proto
		if p == nil {
			p = openai.Wire
		}
		x.t = p.NewTap(dialect.TapConfig{Strip: x.strip, MaxDepth: x.maxDepth, Meta: x.meta})
	}
	return x.t
}

func (x *tap) event(ev []byte) []byte       { return x.get().Event(ev) }
func (x *tap) body(b []byte, complete bool) { x.get().Body(b, complete) }
func (x *tap) tailUsage(tail []byte)        { x.get().Tail(tail) }
func (x *tap) core() *tapcore.Core          { return x.get().(interface{ State() *tapcore.Core }).State() }
func (x *tap) result(promptBytes int, cut, gone bool) (billing.Usage, billing.Source) {
	r := x.get().Result(promptBytes, cut, gone)
	return r.Usage, r.Source
}

func TestTapAnthropicDelta(t *testing.T) {
	tp := tap{proto: anthropic.Wire}
	for _, ev := range []string{
		"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":10,\"cache_creation_input_tokens\":100,\"cache_read_input_tokens\":5,\"output_tokens\":1}}}\n\n",
		"event: message_delta\ndata: {\"type\":\"message_delta\",\"usage\":{\"output_tokens\":7}}\n\n",
		"event: message_delta\ndata: {\"type\":\"message_delta\",\"usage\":{\"input_tokens\":12,\"cache_read_input_tokens\":6,\"output_tokens\":42}}\n\n",
	} {
		tp.event([]byte(ev))
	}
	u, src := tp.result(0, false, false)
	want := billing.Usage{Input: 12, CacheCreation: 100, CacheRead: 6, Output: 42}
	if u != want || src != billing.SourceReported {
		t.Errorf("got %+v %s, want %+v reported", u, src, want)
	}
}

// TestTapCutStreamWithoutStartUsage: a Messages stream whose start
// reported no input (a cloud's, transcoded: Bedrock and Gemini report
// usage only at the end) and which broke before its end bills the
// prompt's estimate, not zero input; one whose start reported input
// keeps it.
func TestTapCutStreamWithoutStartUsage(t *testing.T) {
	for i, tc := range []struct {
		start string
		want  billing.Usage
	}{
		{`{"input_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":0}`, billing.Usage{Input: 100, Output: 2}},
		{`{"input_tokens":0,"cache_read_input_tokens":30,"output_tokens":0}`, billing.Usage{CacheRead: 30, Output: 2}},
		{`{"input_tokens":7,"output_tokens":1}`, billing.Usage{Input: 7, Output: 2}},
	} {
		tp := tap{proto: anthropic.Wire}
		tp.event([]byte("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":" + tc.start + "}}\n\n"))
		tp.event([]byte("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Mock rep\"}}\n\n"))
		u, src := tp.result(400, true, false)
		if u != tc.want || src != billing.SourcePartial {
			t.Errorf("Test %d: got %+v %s, want %+v partial", i, u, src, tc.want)
		}
	}
}

func TestTapEstimates(t *testing.T) {
	tp := tap{proto: openai.Wire}
	tp.event([]byte(`data: {"choices":[{"delta":{"content":"12345678","reasoning_content":"abcd"}}]}` + "\n\n"))
	tp.event([]byte(`data: {"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"name":"f","arguments":"{}"}}]}}]}` + "\n\n"))
	u, src := tp.result(400, false, false)
	if want := (billing.Usage{Input: 100, Output: 4}); u != want || src != billing.SourceEstimated {
		t.Errorf("got %+v %s, want %+v estimated", u, src, want)
	}
	if _, src := tp.result(400, true, true); src != billing.SourcePartial {
		t.Errorf("cut stream: source %s, want partial", src)
	}
	empty := tap{}
	if u, _ := empty.result(0, false, false); u.Input != 1 || u.Output != 1 {
		t.Errorf("empty estimate %+v, want at least 1 token each way", u)
	}
}

func TestTapErrorEvents(t *testing.T) {
	for i, tc := range []struct {
		proto dialect.Wire
		ev    string
		want  bool
	}{
		{openai.Wire, `data: {"choices":[],"error":null}` + "\n\n", false},
		{openai.Wire, `data: {"error":{"message":"overloaded","code":"server_error"}}` + "\n\n", true},
		{anthropic.Wire, "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n", true},
		{anthropic.Wire, "event: ping\ndata: {\"type\":\"ping\"}\n\n", false},
	} {
		tp := tap{proto: tc.proto}
		if out := tp.event([]byte(tc.ev)); string(out) != tc.ev {
			t.Errorf("Test %d: event changed to %q", i, out)
		}
		if tp.core().UpstreamErr != tc.want {
			t.Errorf("Test %d: upstreamError=%v, want %v", i, tp.core().UpstreamErr, tc.want)
		}
	}
}

func TestTapMalformedChunk(t *testing.T) {
	payload := `{"choices":[{"delta":{"content":"abc"}}],"usage":null`
	ev := "data: " + payload + "\n\n"
	tp := tap{proto: openai.Wire, strip: true}
	if got := string(tp.event([]byte(ev))); got != ev {
		t.Errorf("forwarded %q, want it untouched", got)
	}
	if tp.core().OutBytes != int64(len(payload)) {
		t.Errorf("counted %d output bytes, want the whole payload's %d", tp.core().OutBytes, len(payload))
	}
}

// TestTapDeepChunk feeds the tap a hostile upstream's chunks, nested far
// past the limit: each is forwarded untouched and counted whole as output,
// and the usage of a later, sound chunk is still read.
func TestTapDeepChunk(t *testing.T) {
	deep := strings.Repeat("[", 100_000) + strings.Repeat("]", 100_000)
	for i, tc := range []struct {
		proto   dialect.Wire
		payload string
		usage   string // a sound usage event that follows
		want    billing.Usage
	}{
		{openai.Wire, `{"choices":[{"delta":{"content":` + deep + `}}]}`,
			`data: {"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":6}}` + "\n\n", billing.Usage{Input: 5, Output: 6}},
		{openai.Wire, `{"choices":[],"usage":{"prompt_tokens":1,"x":` + deep + `}}`,
			`data: {"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":6}}` + "\n\n", billing.Usage{Input: 5, Output: 6}},
		{openai.Wire, strings.Repeat(`{"a":`, 100_000),
			`data: {"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":6}}` + "\n\n", billing.Usage{Input: 5, Output: 6}},
		{anthropic.Wire, `{"type":"message_start","message":{"usage":{"input_tokens":9,"x":` + deep + `}}}`,
			"event: message_delta\ndata: {\"type\":\"message_delta\",\"usage\":{\"output_tokens\":6}}\n\n", billing.Usage{Output: 6}},
		{anthropic.Wire, `{"type":"content_block_delta","delta":{"type":"text_delta","text":` + deep + `}}`,
			"event: message_delta\ndata: {\"type\":\"message_delta\",\"usage\":{\"output_tokens\":6}}\n\n", billing.Usage{Output: 6}},
	} {
		tp := tap{proto: tc.proto, strip: true}
		ev := "data: " + tc.payload + "\n\n"
		if got := tp.event([]byte(ev)); string(got) != ev {
			t.Errorf("Test %d: the deep event was changed (%d bytes forwarded of %d)", i, len(got), len(ev))
		}
		if tp.core().OutBytes != int64(len(tc.payload)) {
			t.Errorf("Test %d: counted %d output bytes, want the payload's %d", i, tp.core().OutBytes, len(tc.payload))
		}
		tp.event([]byte(tc.usage))
		if u, src := tp.result(0, false, false); u != tc.want || src != billing.SourceReported {
			t.Errorf("Test %d: usage %+v %s, want %+v reported", i, u, src, tc.want)
		}
	}
	// The tap's limit is its own: a chunk within the default limit but
	// over a lower one is unparsable there.
	tp := tap{proto: openai.Wire, maxDepth: 3}
	payload := `{"choices":[{"delta":{"content":"abc"}}],"usage":{"prompt_tokens":1}}`
	tp.event([]byte("data: " + payload + "\n\n"))
	if tp.core().OutBytes != int64(len(payload)) || tp.core().Reported {
		t.Errorf("limit 3: %d output bytes, reported %v; want %d and not reported", tp.core().OutBytes, tp.core().Reported, len(payload))
	}
}

// TestTapDeepBody gives the tap complete non-streaming bodies nested far
// past the limit: their usage is not read and their size is the output.
func TestTapDeepBody(t *testing.T) {
	for i, tc := range []struct {
		proto dialect.Wire
		body  string
	}{
		{openai.Wire, `{"usage":{"prompt_tokens":5,"completion_tokens":6},"x":` + strings.Repeat("[", 100_000) + strings.Repeat("]", 100_000) + `}`},
		{openai.Wire, strings.Repeat("[", sixteenMiB)},
		{anthropic.Wire, `{"usage":{"input_tokens":5,"output_tokens":6},"content":[{"type":"text","text":` + strings.Repeat(`{"a":`, 100_000) + `}]}`},
	} {
		tp := tap{proto: tc.proto}
		tp.body([]byte(tc.body), true)
		if tp.core().Reported || tp.core().OutBytes != int64(len(tc.body)) {
			t.Errorf("Test %d: reported %v, %d output bytes; want an estimate from all %d bytes", i, tp.core().Reported, tp.core().OutBytes, len(tc.body))
		}
	}
}

// TestTapDeepTruncatedBody covers the reads that run on unchecked bytes: a
// truncated body, which cannot be valid JSON, and the tail of one too large
// to keep. gjson's Get, which they use, skips nested values in a loop; this
// test fails (by crashing) if an upgrade makes it recurse.
func TestTapDeepTruncatedBody(t *testing.T) {
	deep := strings.Repeat("[", sixteenMiB)
	tp := tap{proto: openai.Wire}
	tp.body([]byte(`{"x":`+deep), false)
	tp.tailUsage([]byte(`"usage":{"prompt_tokens":3,"x":` + deep))
	tp.tailUsage([]byte(`"usage":` + deep))
	if tp.core().Reported {
		t.Errorf("usage %+v read from deep bytes", tp.core().Usage)
	}
	tp.tailUsage([]byte(deep[:1<<20] + `"usage":{"prompt_tokens":3,"completion_tokens":4}}`))
	if u := tp.core().Usage; !tp.core().Reported || u.Input != 3 || u.Output != 4 {
		t.Errorf("usage after deep bytes: %+v, reported %v", u, tp.core().Reported)
	}
}

// An upstream that repeats its usage, or a count inside it, is billed the
// largest copy: never the smaller one a first-wins reader would take, nor
// less than the last copy the client's JSON parser keeps.
func TestRepeatedUsageBillsTheLargest(t *testing.T) {
	for i, tc := range []struct {
		proto dialect.Wire
		body  string
		want  billing.Usage
	}{
		// Two usage objects, small first, then large first.
		{openai.Wire, `{"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":5},"usage":{"prompt_tokens":1000,"completion_tokens":500}}`,
			billing.Usage{Input: 1000, Output: 500}},
		{openai.Wire, `{"usage":{"prompt_tokens":1000,"completion_tokens":500},"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":5}}`,
			billing.Usage{Input: 1000, Output: 500}},
		// One count twice, and a detail object twice.
		{openai.Wire, `{"usage":{"prompt_tokens":10,"completion_tokens":5,"prompt_tokens":1000}}`, billing.Usage{Input: 1000, Output: 5}},
		{openai.Wire, `{"usage":{"prompt_tokens":100,"completion_tokens":50,"completion_tokens_details":{"reasoning_tokens":40},"completion_tokens_details":{"reasoning_tokens":2}}}`,
			billing.Usage{Input: 100, Output: 50, Reasoning: 40}},
		// Conflicting copies merge field by field: the larger of each.
		{openai.Wire, `{"usage":{"prompt_tokens":1000,"completion_tokens":5},"usage":{"prompt_tokens":10,"completion_tokens":500}}`,
			billing.Usage{Input: 1000, Output: 500}},
		{anthropic.Wire, `{"type":"message","usage":{"input_tokens":3,"output_tokens":700,"output_tokens":7}}`, billing.Usage{Input: 3, Output: 700}},
		{responses.Wire, `{"object":"response","usage":{"input_tokens":9,"output_tokens":1},"usage":{"input_tokens":9,"output_tokens":900}}`,
			billing.Usage{Input: 9, Output: 900}},
		// No repeat: as before.
		{openai.Wire, `{"usage":{"prompt_tokens":7,"completion_tokens":3}}`, billing.Usage{Input: 7, Output: 3}},
	} {
		tp := tap{proto: tc.proto}
		tp.body([]byte(tc.body), true)
		got, src := tp.result(len(tc.body), false, false)
		if got != tc.want || src != billing.SourceReported {
			t.Errorf("Test %d: billed %+v (%s), want %+v", i, got, src, tc.want)
		}
	}
}

// In a stream: a usage chunk with two usage members, a usage member with
// a repeated count, two usage chunks (the larger first), and an Anthropic
// message_delta with output_tokens twice.
func TestRepeatedStreamUsageBillsTheLargest(t *testing.T) {
	chunk := func(s string) string { return "data: " + s + "\n\n" }
	for i, tc := range []struct {
		proto  dialect.Wire
		events []string
		want   billing.Usage
	}{
		{openai.Wire, []string{
			chunk(`{"id":"c","choices":[{"index":0,"delta":{"content":"hi"}}]}`),
			chunk(`{"id":"c","choices":[],"usage":{"prompt_tokens":1,"completion_tokens":1},"usage":{"prompt_tokens":1000,"completion_tokens":50000}}`),
			chunk(`[DONE]`)}, billing.Usage{Input: 1000, Output: 50000}},
		{openai.Wire, []string{
			chunk(`{"id":"c","choices":[],"usage":{"prompt_tokens":1000,"completion_tokens":1,"completion_tokens":50000}}`),
			chunk(`[DONE]`)}, billing.Usage{Input: 1000, Output: 50000}},
		{openai.Wire, []string{
			chunk(`{"id":"c","choices":[],"usage":{"prompt_tokens":1000,"completion_tokens":50000}}`),
			chunk(`{"id":"c","choices":[],"usage":{"prompt_tokens":1,"completion_tokens":1}}`),
			chunk(`[DONE]`)}, billing.Usage{Input: 1000, Output: 50000}},
		{anthropic.Wire, []string{
			"event: message_start\n" + chunk(`{"type":"message_start","message":{"usage":{"input_tokens":20,"output_tokens":1}}}`),
			"event: message_delta\n" + chunk(`{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":900,"output_tokens":9}}`),
			"event: message_stop\n" + chunk(`{"type":"message_stop"}`)}, billing.Usage{Input: 20, Output: 900}},
	} {
		tp := tap{proto: tc.proto}
		for _, ev := range tc.events {
			tp.event([]byte(strings.TrimSuffix(ev, "\n\n")))
		}
		got, _ := tp.result(10, false, false)
		if got != tc.want {
			t.Errorf("Test %d: billed %+v, want %+v", i, got, tc.want)
		}
	}
}

// sixteenMiB is the size of the deep bodies below: the default
// max_request_body, and far past what a recursive validator survives.
const sixteenMiB = 16 << 20
