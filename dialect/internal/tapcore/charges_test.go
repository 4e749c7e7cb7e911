package tapcore_test

import (
	"github.com/caddy-air/caddy-air/billing"
	"github.com/caddy-air/caddy-air/dialect"
	"github.com/caddy-air/caddy-air/dialect/anthropic"
	"github.com/caddy-air/caddy-air/dialect/openai"
	"github.com/caddy-air/caddy-air/dialect/responses"
	"strings"
	"testing"
)

// The taps' charges, service tiers, scrubbed error events and allocations,
// and the Responses tap.

func TestResponsesTap(t *testing.T) {
	for _, tc := range []struct {
		name                     string
		events                   []string
		wantUsage                billing.Usage
		reported, terminal, fail bool
		wantID, wantStatus       string
		wantOut                  int64
	}{
		{
			name: "complete stream", events: respStream,
			wantUsage: billing.Usage{Input: 86, CacheRead: 1920, Output: 300, Reasoning: 192},
			reported:  true, terminal: true, wantID: "resp_1", wantStatus: "completed", wantOut: 13,
		},
		{
			name: "cut after deltas", events: respStream[:4],
			wantID: "resp_1", wantStatus: "in_progress", wantOut: 13,
		},
		{
			name:      "incomplete is terminal with usage",
			events:    []string{respEvent("response.incomplete", `{"type":"response.incomplete","response":{"id":"resp_2","status":"incomplete","usage":{"input_tokens":7,"output_tokens":16}}}`)},
			wantUsage: billing.Usage{Input: 7, Output: 16}, reported: true, terminal: true, wantID: "resp_2", wantStatus: "incomplete",
		},
		{
			name:     "failed is terminal and an upstream error",
			events:   []string{respEvent("response.failed", `{"type":"response.failed","response":{"id":"resp_3","status":"failed","error":{"code":"server_error"},"usage":null}}`)},
			terminal: true, fail: true, wantID: "resp_3", wantStatus: "failed",
		},
		{
			name:     "error event ends the stream",
			events:   []string{respEvent("error", `{"type":"error","code":"rate_limit_exceeded","message":"slow down","param":null}`)},
			terminal: true, fail: true,
		},
		{
			name:    "function call arguments count as output",
			events:  []string{respEvent("response.function_call_arguments.delta", `{"type":"response.function_call_arguments.delta","delta":"{\"city\":\"Paris\"}"}`)},
			wantOut: 20,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tp := tap{proto: responses.Wire}
			for _, ev := range tc.events {
				if out := tp.event([]byte(ev)); string(out) != ev {
					t.Fatalf("event changed:\n%s\nto\n%s", ev, out)
				}
			}
			if tp.core().Usage != tc.wantUsage || tp.core().Reported != tc.reported || tp.core().Term != tc.terminal || tp.core().UpstreamErr != tc.fail {
				t.Errorf("usage %+v reported %v terminal %v error %v", tp.core().Usage, tp.core().Reported, tp.core().Term, tp.core().UpstreamErr)
			}
			if tp.core().RespID != tc.wantID || tp.core().RespStatus != tc.wantStatus || tp.core().OutBytes != tc.wantOut {
				t.Errorf("id %q status %q out %d, want %q %q %d", tp.core().RespID, tp.core().RespStatus, tp.core().OutBytes, tc.wantID, tc.wantStatus, tc.wantOut)
			}
		})
	}
}

// TestTapCharges reads the charges beyond plain tokens from every
// protocol's answer, whole and streamed: audio tokens of chat, Anthropic's
// server tool calls (cumulative in message_delta) and code execution
// container, and the tool call items of a Responses answer.
func TestTapCharges(t *testing.T) {
	const respOutput = `[{"type":"web_search_call","id":"ws_1","status":"completed"},` +
		`{"type":"code_interpreter_call","id":"ci_1","container_id":"cntr_1","code":"1"},` +
		`{"type":"code_interpreter_call","id":"ci_2","container_id":"cntr_1","code":"2"},` +
		`{"type":"image_generation_call","id":"ig_1","result":"aGk="},` +
		`{"type":"message","id":"m1","content":[{"type":"output_text","text":"hi"}]}]`
	for i, tc := range []struct {
		name   string
		proto  dialect.Wire
		body   string   // a whole answer, or
		events []string // a stream
		want   billing.Usage
	}{
		{name: "chat body audio", proto: openai.Wire,
			body: `{"id":"c1","choices":[{"message":{"role":"assistant","audio":{"id":"a1"}}}],"usage":{"prompt_tokens":120,` +
				`"completion_tokens":300,"prompt_tokens_details":{"audio_tokens":100},"completion_tokens_details":{"audio_tokens":280}}}`,
			want: billing.Usage{Input: 120, AudioInput: 100, Output: 300, AudioOutput: 280}},
		{name: "chat stream audio", proto: openai.Wire, events: []string{
			"data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"audio\":{\"transcript\":\"hi\"}}}],\"usage\":null}\n\n",
			"data: {\"id\":\"c1\",\"choices\":[],\"usage\":{\"prompt_tokens\":50,\"completion_tokens\":90," +
				"\"prompt_tokens_details\":{\"audio_tokens\":40},\"completion_tokens_details\":{\"audio_tokens\":85}}}\n\n",
			"data: [DONE]\n\n"},
			want: billing.Usage{Input: 50, AudioInput: 40, Output: 90, AudioOutput: 85}},
		{name: "anthropic body searches and container", proto: anthropic.Wire,
			body: `{"id":"msg_1","type":"message","container":{"id":"container_1","expires_at":"2026-11-27T00:00:00Z"},` +
				`"content":[{"type":"text","text":"ok"}],"usage":{"input_tokens":100,"output_tokens":20,` +
				`"server_tool_use":{"web_search_requests":2,"web_fetch_requests":1}}}`,
			want: billing.Usage{Input: 100, Output: 20, WebSearches: 2, WebFetches: 1, CodeSessions: 1}},
		{name: "anthropic stream: code execution requests without a container", proto: anthropic.Wire, events: []string{
			"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"usage\":{\"input_tokens\":10,\"output_tokens\":1}}}\n\n",
			"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{},\"usage\":{\"output_tokens\":9,\"server_tool_use\":{\"code_execution_requests\":2}}}\n\n"},
			want: billing.Usage{Input: 10, Output: 9, CodeSessions: 1}},
		{name: "anthropic body without container", proto: anthropic.Wire,
			body: `{"id":"msg_1","type":"message","container":null,"usage":{"input_tokens":1,"output_tokens":2}}`,
			want: billing.Usage{Input: 1, Output: 2}},
		{name: "anthropic stream: cumulative searches, container in the delta", proto: anthropic.Wire, events: []string{
			"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"usage\":{\"input_tokens\":10,\"output_tokens\":1,\"server_tool_use\":{\"web_search_requests\":0}}}}\n\n",
			"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{},\"usage\":{\"output_tokens\":5,\"server_tool_use\":{\"web_search_requests\":1}}}\n\n",
			"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"container\":{\"id\":\"container_9\"}},\"usage\":{\"output_tokens\":42,\"server_tool_use\":{\"web_search_requests\":3,\"web_fetch_requests\":1}}}\n\n",
			"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{},\"usage\":{\"output_tokens\":43}}\n\n",
			"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"},
			want: billing.Usage{Input: 10, Output: 43, WebSearches: 3, WebFetches: 1, CodeSessions: 1}},
		{name: "responses body tool items", proto: responses.Wire,
			body: `{"id":"resp_1","status":"completed","output":` + respOutput + `,"usage":{"input_tokens":30,"output_tokens":7}}`,
			want: billing.Usage{Input: 30, Output: 7, WebSearches: 1, CodeSessions: 1, ImageCalls: 1}},
		{name: "responses stream: items once across done, completed and the final output", proto: responses.Wire, events: []string{
			respEvent("response.output_item.done", `{"type":"response.output_item.done","output_index":0,"item":{"type":"web_search_call","id":"ws_1","status":"completed"}}`),
			respEvent("response.image_generation_call.completed", `{"type":"response.image_generation_call.completed","output_index":3,"item_id":"ig_1"}`),
			respEvent("response.output_item.done", `{"type":"response.output_item.done","output_index":1,"item":{"type":"code_interpreter_call","id":"ci_1","container_id":"cntr_1"}}`),
			respEvent("response.completed", `{"type":"response.completed","response":{"id":"resp_1","status":"completed","output":`+respOutput+`,"usage":{"input_tokens":30,"output_tokens":7}}}`)},
			want: billing.Usage{Input: 30, Output: 7, WebSearches: 1, CodeSessions: 1, ImageCalls: 1}},
		{name: "responses stream cut: the calls seen are billed with the estimate", proto: responses.Wire, events: []string{
			respEvent("response.web_search_call.completed", `{"type":"response.web_search_call.completed","output_index":0,"item_id":"ws_1"}`),
			respEvent("response.web_search_call.completed", `{"type":"response.web_search_call.completed","output_index":1,"item_id":"ws_2"}`)},
			want: billing.Usage{Input: 1, Output: 1, WebSearches: 2}},
	} {
		tp := tap{proto: tc.proto}
		if tc.body != "" {
			tp.body([]byte(tc.body), true)
		}
		for _, ev := range tc.events {
			tp.event([]byte(ev))
		}
		if got, _ := tp.result(0, false, false); got != tc.want {
			t.Errorf("Test %d (%s): %+v, want %+v", i, tc.name, got, tc.want)
		}
	}
}

// An upstream's error event reaches the client scrubbed, in its
// protocol's shape, with the event's other lines and (OpenAI) the chunk's
// other members kept; a clean error event passes byte for byte.
func TestErrorEventsAreScrubbed(t *testing.T) {
	for i, tc := range []struct {
		proto    dialect.Wire
		ev, want string
	}{
		{openai.Wire, `data: {"id":"c","choices":[{"index":0,"delta":{"content":"8"}}],"error":{"message":"quota of org-AbCdEf123456 exceeded","type":"insufficient_quota","code":"insufficient_quota","organization":"org-AbCdEf123456"}}` + "\n\n",
			`data: {"id":"c","choices":[{"index":0,"delta":{"content":"8"}}],"error":{"message":"quota of [redacted] exceeded","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}` + "\n\n"},
		{anthropic.Wire, "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"authentication_error\",\"message\":\"invalid x-api-key sk-ant-api03-QQQQQQQQ\"}}\n\n",
			"event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"authentication_error\",\"message\":\"invalid x-api-key [redacted]\"}}\n\n"},
		{responses.Wire, "event: error\ndata: {\"type\":\"error\",\"code\":\"server_error\",\"message\":\"project proj_Zz9Yy8Xx7Ww6 failed\",\"param\":null,\"sequence_number\":4,\"debug\":\"x\"}\n\n",
			"event: error\ndata: {\"type\":\"error\",\"code\":\"server_error\",\"message\":\"project [redacted] failed\",\"param\":null,\"sequence_number\":4}\n\n"},
		{responses.Wire, "event: response.failed\ndata: {\"type\":\"response.failed\",\"response\":{\"id\":\"resp_1\",\"status\":\"failed\",\"error\":{\"code\":\"server_error\",\"message\":\"org-AbCdEf123456 is over\"}}}\n\n",
			"event: response.failed\ndata: {\"type\":\"response.failed\",\"response\":{\"id\":\"resp_1\",\"status\":\"failed\",\"error\":{\"code\":\"server_error\",\"message\":\"[redacted] is over\"}}}\n\n"},
		// Clean: unchanged.
		{openai.Wire, `data: {"error":{"message":"overloaded","type":"server_error"}}` + "\n\n", `data: {"error":{"message":"overloaded","type":"server_error"}}` + "\n\n"},
	} {
		tp := tap{proto: tc.proto}
		got := string(tp.event([]byte(tc.ev)))
		if got != tc.want {
			t.Errorf("Test %d: forwarded\n%q\nwant\n%q", i, got, tc.want)
		}
		if !tp.core().UpstreamErr {
			t.Errorf("Test %d: not seen as an error event", i)
		}
		if strings.Contains(got, "org-") || strings.Contains(got, "proj_") || strings.Contains(got, "sk-ant") {
			t.Errorf("Test %d: a secret reached the client: %s", i, got)
		}
	}
}

// TestTapServiceTier reads the service tier each protocol reports, streamed
// and whole, along with the 1-hour cache writes.
func TestTapServiceTier(t *testing.T) {
	for i, tc := range []struct {
		proto  dialect.Wire
		events []string // SSE events; a single non-event string is a body
		tier   string
		usage  billing.Usage
	}{
		{openai.Wire, []string{
			`data: {"id":"c","service_tier":"flex","choices":[{"delta":{"content":"hi"}}]}` + "\n\n",
			`data: {"id":"c","service_tier":"flex","choices":[],"usage":{"prompt_tokens":10,"completion_tokens":4,"completion_tokens_details":{"reasoning_tokens":3}}}` + "\n\n",
		}, "flex", billing.Usage{Input: 10, Output: 4, Reasoning: 3}},
		{openai.Wire, []string{`{"id":"c","service_tier":"priority","choices":[],"usage":{"prompt_tokens":10,"completion_tokens":4}}`},
			"priority", billing.Usage{Input: 10, Output: 4}},
		{openai.Wire, []string{`{"id":"c","choices":[],"usage":{"prompt_tokens":10,"completion_tokens":4}}`}, "", billing.Usage{Input: 10, Output: 4}},
		{anthropic.Wire, []string{
			"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":10,\"cache_creation_input_tokens\":300,\"cache_creation\":{\"ephemeral_5m_input_tokens\":100,\"ephemeral_1h_input_tokens\":200},\"output_tokens\":1,\"service_tier\":\"priority\"}}}\n\n",
			"event: message_delta\ndata: {\"type\":\"message_delta\",\"usage\":{\"output_tokens\":7}}\n\n",
		}, "priority", billing.Usage{Input: 10, CacheCreation: 300, CacheCreation1h: 200, Output: 7}},
		{anthropic.Wire, []string{`{"type":"message","usage":{"input_tokens":5,"output_tokens":2,"service_tier":"standard"}}`},
			"standard", billing.Usage{Input: 5, Output: 2}},
	} {
		tp := tap{proto: tc.proto}
		if len(tc.events) == 1 && tc.events[0][0] == '{' {
			tp.body([]byte(tc.events[0]), true)
		} else {
			for _, ev := range tc.events {
				tp.event([]byte(ev))
			}
		}
		u, _ := tp.result(0, false, false)
		if tp.core().ServiceTier != tc.tier || u != tc.usage {
			t.Errorf("Test %d: got tier %q usage %+v, want %q %+v", i, tp.core().ServiceTier, u, tc.tier, tc.usage)
		}
	}
}

// TestTapChunkAllocatesNothing: passing one content event of a stream
// through the tap, usage stripped, allocates nothing, whichever protocol.
// A long answer is thousands of such events; an allocation in each is a
// collection every few hundred streams.
func TestTapChunkAllocatesNothing(t *testing.T) {
	for _, tc := range []struct {
		name  string
		proto dialect.Wire
		ev    string
		want  int // bytes forwarded
	}{
		{
			name:  "openai chunk with usage null",
			proto: openai.Wire,
			ev: `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1763769600,"model":"qwen-plus",` +
				`"service_tier":"default","system_fingerprint":"fp","choices":[{"index":0,"delta":{"content":" the tower"},` +
				`"logprobs":null,"finish_reason":null}],"usage":null}` + "\n\n",
			want: -len(`,"usage":null`),
		},
		{
			name:  "anthropic text delta",
			proto: anthropic.Wire,
			ev:    "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\" the tower\"}}\n\n",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev := []byte(tc.ev)
			buf := make([]byte, len(ev))
			tp := tap{proto: tc.proto, strip: true, meta: new(dialect.Meta)}
			var out []byte
			allocs := testing.AllocsPerRun(200, func() {
				copy(buf, ev)
				out = tp.event(buf)
			})
			if len(out) != len(ev)+tc.want {
				t.Fatalf("forwarded %q", out)
			}
			if allocs != 0 {
				t.Errorf("%v allocations per event, want 0", allocs)
			}
		})
	}
}

// BenchmarkTapChunk is the tap's work on one chunk of a stream like the
// mock provider's, usage stripped.
func BenchmarkTapChunk(b *testing.B) {
	ev := []byte(`data: {"id":"chatcmpl-mock-0123456789abcdef","object":"chat.completion.chunk","created":1763769600,"model":"qwen-plus",` +
		`"service_tier":"default","system_fingerprint":"fp_mock","choices":[{"index":0,"delta":{"content":" the tower was"},` +
		`"logprobs":null,"finish_reason":null}],"usage":null}` + "\n\n")
	buf := make([]byte, len(ev))
	t := tap{proto: openai.Wire, strip: true}
	b.ReportAllocs()
	b.SetBytes(int64(len(ev)))
	for b.Loop() {
		copy(buf, ev)
		if out := t.event(buf); len(out) != len(ev)-len(`,"usage":null`) {
			b.Fatalf("forwarded %q", out)
		}
	}
}

// Fixtures, copies of those of chatproxy's Serve tests.

// respEvent builds one Responses stream event.
func respEvent(typ, data string) string {
	return "event: " + typ + "\ndata: " + data + "\n\n"
}

const respCompletedUsage = `{"input_tokens":2006,"input_tokens_details":{"cached_tokens":1920},"output_tokens":300,"output_tokens_details":{"reasoning_tokens":192},"total_tokens":2306}`

var respStream = []string{
	respEvent("response.created", `{"type":"response.created","sequence_number":0,"response":{"id":"resp_1","object":"response","status":"in_progress","model":"gpt-5","output":[],"usage":null}}`),
	respEvent("response.in_progress", `{"type":"response.in_progress","sequence_number":1,"response":{"id":"resp_1","object":"response","status":"in_progress","model":"gpt-5","usage":null}}`),
	respEvent("response.output_text.delta", `{"type":"response.output_text.delta","sequence_number":2,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"Hello"}`),
	respEvent("response.output_text.delta", `{"type":"response.output_text.delta","sequence_number":3,"item_id":"msg_1","output_index":0,"content_index":0,"delta":" world!!"}`),
	respEvent("response.completed", `{"type":"response.completed","sequence_number":4,"response":{"id":"resp_1","object":"response","status":"completed","model":"gpt-5","usage":`+respCompletedUsage+`}}`),
}
