package mockprovider

import (
	"net/http"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

func TestResponsesJSONAndRetrieve(t *testing.T) {
	base := newServer(t, Config{})
	status, _, body := post(t, base+"/responses", `{"model":"mock-gpt","input":"`+strings.Repeat("a", 400)+`"}`)
	if status != 200 {
		t.Fatalf("%d %s", status, body)
	}
	r := gjson.Parse(body)
	id := r.Get("id").Str
	if !strings.HasPrefix(id, "resp_") || r.Get("object").Str != "response" || r.Get("status").Str != "completed" ||
		r.Get("output.0.content.0.type").Str != "output_text" || r.Get("usage.input_tokens").Int() != 100 ||
		r.Get("usage.output_tokens").Int() == 0 || r.Get("usage.total_tokens").Int() != r.Get("usage.input_tokens").Int()+r.Get("usage.output_tokens").Int() {
		t.Fatalf("response %s", body)
	}
	// A continuation bills the whole previous exchange as input, its
	// prompt as cached.
	status, _, body2 := post(t, base+"/responses", `{"model":"mock-gpt","input":"bbbb","previous_response_id":"`+id+`"}`)
	r2 := gjson.Parse(body2)
	if status != 200 || r2.Get("previous_response_id").Str != id ||
		r2.Get("usage.input_tokens").Int() != 1+r.Get("usage.total_tokens").Int() || r2.Get("usage.input_tokens_details.cached_tokens").Int() != 100 {
		t.Fatalf("continuation %d %s", status, body2)
	}
	status, _, got := do(t, http.MethodGet, base+"/responses/"+id, "", "")
	if status != 200 || got != body {
		t.Errorf("retrieve %d %s, want %s", status, got, body)
	}
	status, _, items := do(t, http.MethodGet, base+"/responses/"+id+"/input_items", "", "")
	if status != 200 || gjson.Get(items, "data.0.content.0.text").Str != strings.Repeat("a", 400) {
		t.Errorf("input items %d %s", status, items)
	}
	if status, _, _ := do(t, http.MethodDelete, base+"/responses/"+id, "", ""); status != 200 {
		t.Errorf("delete %d", status)
	}
	status, _, nf := do(t, http.MethodGet, base+"/responses/"+id, "", "")
	if status != 404 || gjson.Get(nf, "error.type").Str != "invalid_request_error" {
		t.Errorf("after delete %d %s", status, nf)
	}
	status, _, nf = post(t, base+"/responses", `{"model":"m","previous_response_id":"resp_nope"}`)
	if status != 404 || gjson.Get(nf, "error.param").Str != "previous_response_id" {
		t.Errorf("unknown previous id %d %s", status, nf)
	}
}

func TestResponsesStream(t *testing.T) {
	base := newServer(t, Config{})
	status, h, body := post(t, base+"/responses", `{"model":"mock-reasoner","input":"hello there","stream":true,"mock_chunks":3}`)
	if status != 200 || !strings.HasPrefix(h.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("%d %v", status, h)
	}
	events := parseSSE(t, body)
	var names []string
	var text strings.Builder
	for i, ev := range events {
		d := gjson.Parse(ev.data)
		if d.Get("type").Str != ev.name || d.Get("sequence_number").Int() != int64(i) {
			t.Errorf("event %d: %s %s", i, ev.name, ev.data)
		}
		if ev.name == "response.output_text.delta" {
			text.WriteString(d.Get("delta").Str)
		}
		names = append(names, ev.name)
	}
	want := "response.created response.in_progress response.output_item.added response.output_item.done " +
		"response.output_item.added response.content_part.added response.output_text.delta response.output_text.delta response.output_text.delta " +
		"response.output_text.done response.content_part.done response.output_item.done response.completed"
	if strings.Join(names, " ") != want {
		t.Fatalf("events:\n%s", strings.Join(names, " "))
	}
	done := gjson.Parse(events[len(events)-1].data).Get("response")
	if done.Get("status").Str != "completed" || done.Get("output.1.content.0.text").Str != text.String() ||
		done.Get("usage.output_tokens_details.reasoning_tokens").Int() == 0 ||
		done.Get("usage.output_tokens").Int() <= done.Get("usage.output_tokens_details.reasoning_tokens").Int() {
		t.Errorf("completed %s (deltas %q)", done.Raw, text.String())
	}
	status, _, got := do(t, http.MethodGet, base+"/responses/"+done.Get("id").Str, "", "")
	if status != 200 || gjson.Get(got, "usage").Raw != done.Get("usage").Raw {
		t.Errorf("retrieve %d %s", status, got)
	}
}

func TestResponsesBackground(t *testing.T) {
	base := newServer(t, Config{})
	_, _, body := post(t, base+"/responses", `{"model":"mock-gpt","input":"x","background":true,"mock_background_ms":3600000}`)
	r := gjson.Parse(body)
	if r.Get("status").Str != "queued" || r.Get("usage").Type != gjson.Null {
		t.Fatalf("create %s", body)
	}
	id := r.Get("id").Str
	if _, _, got := do(t, http.MethodGet, base+"/responses/"+id, "", ""); gjson.Get(got, "status").Str != "queued" {
		t.Errorf("before its time %s", got)
	}
	if _, _, got := post(t, base+"/responses/"+id+"/cancel", ""); gjson.Get(got, "status").Str != "cancelled" {
		t.Errorf("cancel %s", got)
	}
	_, _, body = post(t, base+"/responses", `{"model":"mock-gpt","input":"x","background":true}`)
	id = gjson.Get(body, "id").Str
	_, _, got := do(t, http.MethodGet, base+"/responses/"+id, "", "")
	if gjson.Get(got, "status").Str != "completed" || gjson.Get(got, "usage.input_tokens").Int() != 1 {
		t.Errorf("completed %s", got)
	}
	if status, _, e := post(t, base+"/responses/"+id+"/cancel", ""); status != 200 || gjson.Get(e, "status").Str != "completed" {
		t.Errorf("cancel after completion %d %s", status, e)
	}
}
