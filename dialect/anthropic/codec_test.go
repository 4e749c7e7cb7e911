package anthropic

import (
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/caddy-air/caddy-air/dialect"
)

func TestDecodeRequest(t *testing.T) {
	for i, tc := range []struct {
		body  string
		check func(r *dialect.Request) bool
		err   string
	}{
		{body: `{"model":"m","max_tokens":5,"system":"S","messages":[{"role":"user","content":"U"}],"metadata":{"user_id":"u1"},"stop_sequences":["a","b"]}`,
			check: func(r *dialect.Request) bool {
				return r.System[0].Text == "S" && r.MaxTokens == 5 && r.User == "u1" && len(r.Stop) == 2 && r.StreamUsage
			}},
		{body: `{"model":"m","max_tokens":5,"system":[{"type":"text","text":"S","cache_control":{"type":"ephemeral"}}],"messages":[{"role":"user","content":"U"}],"tool_choice":{"type":"tool","name":"f","disable_parallel_tool_use":true},"thinking":{"type":"enabled","budget_tokens":2048}}`,
			check: func(r *dialect.Request) bool {
				return string(r.System[0].CacheControl) == `{"type":"ephemeral"}` && r.ToolChoice.Mode == dialect.ToolNamed &&
					r.ToolChoice.Name == "f" && r.ToolChoice.NoParallel && r.Reasoning.BudgetTokens == 2048
			}},
		{body: `{"model":"m","max_tokens":5,"messages":[{"role":"assistant","content":[{"type":"thinking","thinking":"t","signature":"s"},{"type":"redacted_thinking","data":"D"},{"type":"tool_use","id":"toolu_1","name":"f","input":{"a":1}}]},
			{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","is_error":true,"content":"no"},{"type":"image","source":{"type":"url","url":"https://x/i.png"}}]}]}`,
			check: func(r *dialect.Request) bool {
				a, u := r.Messages[0].Content, r.Messages[1].Content
				return a[0].Signature == "s" && a[1].Data == "D" && a[2].ToolID == "toolu_1" && string(a[2].Input) == `{"a":1}` &&
					u[0].IsError && u[0].Content[0].Text == "no" && u[1].Image.URL == "https://x/i.png"
			}},
		{body: `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"U"}],"service_tier":"auto","tools":[{"type":"web_search_20250305","name":"web_search"}]}`,
			check: func(r *dialect.Request) bool {
				return reflect.DeepEqual(r.Unsupported, []string{"service_tier", "tools.web_search_20250305"})
			}},
		{body: `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"type":"document","source":{}}]}]}`, err: `"document"`},
		{body: `{"model":"m","max_tokens":5,"messages":[{"role":"system","content":"x"}]}`, err: "role"},
		{body: `{"model":"m","tool_choice":{"type":"sometimes"},"messages":[]}`, err: "tool_choice"},
	} {
		r, err := Codec{}.DecodeRequest([]byte(tc.body))
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("Test %d: error %v, want %q", i, err, tc.err)
			}
			continue
		}
		if err != nil || !tc.check(r) {
			t.Errorf("Test %d: %v %+v", i, err, r)
		}
	}
}

func TestEncodeRequest(t *testing.T) {
	r := &dialect.Request{Model: "m", MaxTokens: 2000, Reasoning: &dialect.Reasoning{Effort: "high"},
		ResponseFormat: &dialect.ResponseFormat{Type: "json_object"},
		Messages: []dialect.Message{
			{Role: dialect.RoleUser, Content: []dialect.Block{{Kind: dialect.BlockText, Text: "q"}}},
			{Role: dialect.RoleUser, Content: []dialect.Block{{Kind: dialect.BlockImage, Image: &dialect.Image{URL: "https://x/i.png"}}}},
			{Role: dialect.RoleAssistant, Content: []dialect.Block{{Kind: dialect.BlockThinking, Text: "unsigned"}, {Kind: dialect.BlockText, Text: "a"}}},
			{Role: dialect.RoleUser, Content: []dialect.Block{{Kind: dialect.BlockToolResult, ToolID: "c1", IsError: true, Content: []dialect.Block{{Kind: dialect.BlockText, Text: "no"}}}}},
		},
		Tools:      []dialect.Tool{{Name: "f", Schema: []byte(`{"type":"object"}`), CacheControl: []byte(`{"type":"ephemeral"}`)}},
		ToolChoice: &dialect.ToolChoice{Mode: dialect.ToolAny},
	}
	b, err := Codec{}.EncodeRequest(nil, r)
	if err != nil || !gjson.ValidBytes(b) {
		t.Fatalf("%v %s", err, b)
	}
	for path, want := range map[string]string{
		"max_tokens": "2000", "messages.#": "3", "messages.0.content.#": "2", "messages.0.content.1.source.url": "https://x/i.png",
		"messages.1.content.#": "1", "messages.1.content.0.text": "a",
		"messages.2.content.0.tool_use_id": "c1", "messages.2.content.0.is_error": "true",
		"thinking.budget_tokens": "1999", "tool_choice.type": "any", "tools.0.cache_control.type": "ephemeral",
	} {
		if got := gjson.GetBytes(b, path).String(); got != want {
			t.Errorf("%s = %q, want %q in %s", path, got, want, b)
		}
	}
	if !reflect.DeepEqual(r.Dropped, []string{"reasoning_content"}) || !reflect.DeepEqual(r.Unsupported, []string{"response_format"}) {
		t.Errorf("dropped %q, unsupported %q", r.Dropped, r.Unsupported)
	}
	// Too little room for the smallest budget: no thinking, said so.
	r = &dialect.Request{Model: "m", MaxTokens: 500, Reasoning: &dialect.Reasoning{Effort: "low"}}
	b, _ = Codec{}.EncodeRequest(nil, r)
	if gjson.GetBytes(b, "thinking").Exists() || !reflect.DeepEqual(r.Dropped, []string{"reasoning_effort"}) {
		t.Errorf("%s dropped %q", b, r.Dropped)
	}
}

func TestStreamDecoder(t *testing.T) {
	stream := "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"model\":\"c\",\"usage\":{\"input_tokens\":10,\"cache_read_input_tokens\":90,\"output_tokens\":1}}}\n\n" +
		"event: ping\ndata: {\"type\":\"ping\"}\n\n" +
		"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"f\",\"input\":{}}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"\"}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"a\\\":1}\"}}\n\n" +
		"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n" +
		"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\"},\"usage\":{\"output_tokens\":3}}\n\n" +
		"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\"},\"usage\":{\"input_tokens\":12,\"output_tokens\":7}}\n\n" +
		"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
	d := Codec{}.NewStreamDecoder()
	var ev dialect.Event
	var kinds []dialect.EventKind
	for _, piece := range strings.SplitAfter(stream, ":") {
		d.Feed([]byte(piece))
		for d.Next(&ev) {
			kinds = append(kinds, ev.Kind)
			switch ev.Kind {
			case dialect.EventBlockStart:
				if ev.Block.ToolID != "toolu_1" || ev.Block.ToolName != "f" {
					t.Errorf("block %+v", ev.Block)
				}
			case dialect.EventDelta:
				if string(ev.Text) != `{"a":1}` || ev.Delta != dialect.DeltaJSON {
					t.Errorf("delta %q", ev.Text)
				}
			case dialect.EventStop:
				if ev.StopReason != dialect.StopToolUse || ev.Usage.Input != 12 || ev.Usage.CacheRead != 90 || ev.Usage.Output != 7 {
					t.Errorf("stop %+v", ev)
				}
			}
		}
	}
	want := []dialect.EventKind{dialect.EventStart, dialect.EventBlockStart, dialect.EventDelta, dialect.EventBlockStop, dialect.EventStop}
	if !reflect.DeepEqual(kinds, want) || d.End(&ev) {
		t.Fatalf("events %v", kinds)
	}
	d = Codec{}.NewStreamDecoder()
	d.Feed([]byte("event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n"))
	if !d.Next(&ev) || ev.Kind != dialect.EventError || ev.Err.Kind != dialect.ErrOverloaded || ev.Err.Status != 529 || d.End(&ev) {
		t.Errorf("error event %+v", ev)
	}
	d = Codec{}.NewStreamDecoder()
	d.Feed([]byte("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{}}\n\nevent: content_block_start\ndata: {"))
	for d.Next(&ev) {
	}
	if !d.End(&ev) || ev.Err.Kind != dialect.ErrCut {
		t.Errorf("cut %+v", ev)
	}
}

func TestErrors(t *testing.T) {
	e := Codec{}.DecodeError(529, http.Header{"Retry-After": {"3"}}, []byte(`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`))
	if e.Kind != dialect.ErrOverloaded || e.RetryAfter != 3*time.Second || e.Message != "Overloaded" {
		t.Fatalf("%+v", e)
	}
	for i, tc := range []struct {
		e      dialect.Error
		status int
		typ    string
	}{
		{dialect.Error{Status: 429, Kind: dialect.ErrRateLimit, Message: "m"}, 429, "rate_limit_error"},
		{dialect.Error{Status: 503, Kind: dialect.ErrOverloaded, Message: "m"}, 503, "overloaded_error"},
		{dialect.Error{Status: 500, Kind: dialect.ErrServer, Message: "m"}, 500, "api_error"},
		{dialect.Error{Status: 502, Kind: dialect.ErrCut, Message: "m"}, 502, "overloaded_error"},
	} {
		status, body := Codec{}.EncodeError(&tc.e)
		if status != tc.status || gjson.GetBytes(body, "type").Str != "error" || gjson.GetBytes(body, "error.type").Str != tc.typ {
			t.Errorf("Test %d: %d %s", i, status, body)
		}
	}
}
