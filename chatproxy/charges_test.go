package chatproxy

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/caddy-air/caddy-air/billing"
)

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
		proto  Protocol
		body   string   // a whole answer, or
		events []string // a stream
		want   billing.Usage
	}{
		{name: "chat body audio", proto: OpenAI,
			body: `{"id":"c1","choices":[{"message":{"role":"assistant","audio":{"id":"a1"}}}],"usage":{"prompt_tokens":120,` +
				`"completion_tokens":300,"prompt_tokens_details":{"audio_tokens":100},"completion_tokens_details":{"audio_tokens":280}}}`,
			want: billing.Usage{Input: 120, AudioInput: 100, Output: 300, AudioOutput: 280}},
		{name: "chat stream audio", proto: OpenAI, events: []string{
			"data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"audio\":{\"transcript\":\"hi\"}}}],\"usage\":null}\n\n",
			"data: {\"id\":\"c1\",\"choices\":[],\"usage\":{\"prompt_tokens\":50,\"completion_tokens\":90," +
				"\"prompt_tokens_details\":{\"audio_tokens\":40},\"completion_tokens_details\":{\"audio_tokens\":85}}}\n\n",
			"data: [DONE]\n\n"},
			want: billing.Usage{Input: 50, AudioInput: 40, Output: 90, AudioOutput: 85}},
		{name: "anthropic body searches and container", proto: Anthropic,
			body: `{"id":"msg_1","type":"message","container":{"id":"container_1","expires_at":"2026-11-27T00:00:00Z"},` +
				`"content":[{"type":"text","text":"ok"}],"usage":{"input_tokens":100,"output_tokens":20,` +
				`"server_tool_use":{"web_search_requests":2,"web_fetch_requests":1}}}`,
			want: billing.Usage{Input: 100, Output: 20, WebSearches: 2, WebFetches: 1, CodeSessions: 1}},
		{name: "anthropic stream: code execution requests without a container", proto: Anthropic, events: []string{
			"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"usage\":{\"input_tokens\":10,\"output_tokens\":1}}}\n\n",
			"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{},\"usage\":{\"output_tokens\":9,\"server_tool_use\":{\"code_execution_requests\":2}}}\n\n"},
			want: billing.Usage{Input: 10, Output: 9, CodeSessions: 1}},
		{name: "anthropic body without container", proto: Anthropic,
			body: `{"id":"msg_1","type":"message","container":null,"usage":{"input_tokens":1,"output_tokens":2}}`,
			want: billing.Usage{Input: 1, Output: 2}},
		{name: "anthropic stream: cumulative searches, container in the delta", proto: Anthropic, events: []string{
			"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"usage\":{\"input_tokens\":10,\"output_tokens\":1,\"server_tool_use\":{\"web_search_requests\":0}}}}\n\n",
			"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{},\"usage\":{\"output_tokens\":5,\"server_tool_use\":{\"web_search_requests\":1}}}\n\n",
			"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"container\":{\"id\":\"container_9\"}},\"usage\":{\"output_tokens\":42,\"server_tool_use\":{\"web_search_requests\":3,\"web_fetch_requests\":1}}}\n\n",
			"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{},\"usage\":{\"output_tokens\":43}}\n\n",
			"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"},
			want: billing.Usage{Input: 10, Output: 43, WebSearches: 3, WebFetches: 1, CodeSessions: 1}},
		{name: "responses body tool items", proto: Responses,
			body: `{"id":"resp_1","status":"completed","output":` + respOutput + `,"usage":{"input_tokens":30,"output_tokens":7}}`,
			want: billing.Usage{Input: 30, Output: 7, WebSearches: 1, CodeSessions: 1, ImageCalls: 1}},
		{name: "responses stream: items once across done, completed and the final output", proto: Responses, events: []string{
			respEvent("response.output_item.done", `{"type":"response.output_item.done","output_index":0,"item":{"type":"web_search_call","id":"ws_1","status":"completed"}}`),
			respEvent("response.image_generation_call.completed", `{"type":"response.image_generation_call.completed","output_index":3,"item_id":"ig_1"}`),
			respEvent("response.output_item.done", `{"type":"response.output_item.done","output_index":1,"item":{"type":"code_interpreter_call","id":"ci_1","container_id":"cntr_1"}}`),
			respEvent("response.completed", `{"type":"response.completed","response":{"id":"resp_1","status":"completed","output":`+respOutput+`,"usage":{"input_tokens":30,"output_tokens":7}}}`)},
			want: billing.Usage{Input: 30, Output: 7, WebSearches: 1, CodeSessions: 1, ImageCalls: 1}},
		{name: "responses stream cut: the calls seen are billed with the estimate", proto: Responses, events: []string{
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

// largeResponse is a pretty-printed Responses answer larger than maxHeld:
// its generated image makes it so.
func largeResponse() string {
	return `{
  "id": "resp_big",
  "status": "completed",
  "output": [
    {"type": "web_search_call", "id": "ws_1", "status": "completed"},
    {"type" :  "web_search_call", "id": "ws_2", "status": "completed"},
    {"id": "ci_1", "type": "code_interpreter_call", "container_id": "cntr_1", "code": "1"},
    {"id": "ci_2", "type": "code_interpreter_call", "container_id": "cntr_1", "code": "2"},
    {"type": "image_generation_call", "id": "ig_1", "result": "` + strings.Repeat("QUJD", maxHeld) + `"},
    {"type": "message", "id": "m1", "content": [{"type": "output_text", "text": "quoting \"type\": \"web_search_call\" is no call"}]}
  ],
  "usage": {"input_tokens": 40, "output_tokens": 9}
}`
}

// TestServeLargeResponsesCountsToolCalls checks that the tool calls of a
// Responses answer too large to hold, forwarded as it arrives, are still
// counted: each once, code sessions by container.
func TestServeLargeResponsesCountsToolCalls(t *testing.T) {
	big := largeResponse()
	up := newUpstream(t, answer(200, "application/json", big))
	body := `{"model":"alias","input":"draw"}`
	c := responsesCall(t, provider("openai", 0, up.URL+"/v1"), body, "gpt-5")
	rec := httptest.NewRecorder()
	res := (&Proxy{}).Serve(rec, clientRequest(context.Background(), body), c)
	res.Held.Release(rec)
	res.Close()
	want := billing.Usage{Input: 40, Output: 9, WebSearches: 2, CodeSessions: 1, ImageCalls: 1}
	if rec.Body.String() != big || res.Usage != want {
		t.Errorf("released %d of %d bytes, usage %+v, want %+v", rec.Body.Len(), len(big), res.Usage, want)
	}
}

// TestToolScanPieces feeds a large answer to the scan in pieces of every
// size from 1 byte, so that members split between reads are counted once.
func TestToolScanPieces(t *testing.T) {
	head := largeResponse()
	i := strings.Index(head, `"result": "`)
	small := head[:i] + `"result": "QUJD"}` + head[strings.Index(head, `"},`+"\n"+`    {"type": "message"`)+2:]
	want := billing.Usage{WebSearches: 2, CodeSessions: 1, ImageCalls: 1}
	for _, size := range []int{1, 2, 3, 7, 64, 127, 128, 129, 500, len(small)} {
		var s toolScan
		for j := 0; j < len(small); j += size {
			s.feed([]byte(small[j:min(j+size, len(small))]), false)
		}
		s.feed(nil, true)
		if got := s.apply(billing.Usage{}); got != want {
			t.Errorf("pieces of %d: %+v, want %+v", size, got, want)
		}
	}
}

// TestServeResponsesStreamLargeEvents streams an image generation whose
// output_item.done and response.completed events are larger than maxEvent,
// so that they pass unparsed: the call is counted from its small
// image_generation_call.completed event, and the usage and the stream's end
// are read from the completed event's tail.
func TestServeResponsesStreamLargeEvents(t *testing.T) {
	img := strings.Repeat("QUJD", maxEvent/2)
	item := `{"type":"image_generation_call","id":"ig_1","status":"completed","result":"` + img + `"}`
	events := []string{
		respEvent("response.created", `{"type":"response.created","response":{"id":"resp_i","status":"in_progress","output":[]}}`),
		respEvent("response.output_item.done", `{"type":"response.output_item.done","output_index":0,"item":`+item+`}`),
		respEvent("response.image_generation_call.completed", `{"type":"response.image_generation_call.completed","output_index":0,"item_id":"ig_1"}`),
		respEvent("response.completed", `{"type":"response.completed","response":{"id":"resp_i","status":"completed","output":[`+item+`],`+
			`"usage":{"input_tokens":25,"output_tokens":1300}}}`),
	}
	up := newUpstream(t, sseAnswer(events))
	body := `{"model":"alias","input":"draw","stream":true}`
	rec := httptest.NewRecorder()
	res := (&Proxy{}).Serve(rec, clientRequest(context.Background(), body), responsesCall(t, provider("openai", 0, up.URL+"/v1"), body, "gpt-5"))
	res.Held.Release(rec)
	res.Close()
	want := billing.Usage{Input: 25, Output: 1300, ImageCalls: 1}
	if rec.Body.String() != strings.Join(events, "") || res.Usage != want || res.Source != billing.SourceReported || res.Outcome != OutcomeOK {
		t.Errorf("usage %+v source %s outcome %s, want %+v reported ok", res.Usage, res.Source, res.Outcome, want)
	}
}
