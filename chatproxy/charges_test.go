package chatproxy

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/caddy-air/caddy-air/billing"
)

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
