package openai

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
		{body: `{"model":"m","messages":[{"role":"system","content":"S"},{"role":"developer","content":[{"type":"text","text":"D"}]},{"role":"user","content":"U"}]}`,
			check: func(r *dialect.Request) bool {
				return len(r.System) == 2 && r.System[1].Text == "D" && len(r.Messages) == 1 && r.Messages[0].Content[0].Text == "U"
			}},
		{body: `{"model":"m","messages":[{"role":"user","content":"q"},{"role":"assistant","tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":""}}]},{"role":"tool","tool_call_id":"a","content":"r1"},{"role":"tool","tool_call_id":"b","content":[{"type":"text","text":"r2"}]}]}`,
			check: func(r *dialect.Request) bool {
				last := r.Messages[2]
				return len(r.Messages) == 3 && string(r.Messages[1].Content[0].Input) == "{}" && last.Role == dialect.RoleUser &&
					len(last.Content) == 2 && last.Content[1].ToolID == "b" && last.Content[1].Content[0].Text == "r2"
			}},
		{body: `{"model":"m","messages":[{"role":"user","content":"q"}],"max_completion_tokens":9,"stop":"X","parallel_tool_calls":false,"tool_choice":{"type":"function","function":{"name":"f"}},"stream":true,"stream_options":{"include_usage":true}}`,
			check: func(r *dialect.Request) bool {
				return r.MaxTokens == 9 && reflect.DeepEqual(r.Stop, []string{"X"}) && r.ToolChoice.NoParallel && r.ToolChoice.Mode == dialect.ToolNamed &&
					r.ToolChoice.Name == "f" && r.Stream && r.StreamUsage
			}},
		{body: `{"model":"m","messages":[{"role":"user","content":"q"}],"response_format":{"type":"json_schema","json_schema":{"name":"n","schema":{"type":"object"},"strict":true}},"reasoning_effort":"high"}`,
			check: func(r *dialect.Request) bool {
				return r.ResponseFormat.Name == "n" && r.ResponseFormat.Strict && string(r.ResponseFormat.Schema) == `{"type":"object"}` && r.Reasoning.Effort == "high"
			}},
		{body: `{"model":"m","messages":[{"role":"user","content":"q"}],"n":2,"logprobs":true,"seed":4,"n":1,"user":"u","temperature":null}`,
			check: func(r *dialect.Request) bool {
				return reflect.DeepEqual(r.Unsupported, []string{"n", "logprobs", "seed"}) && r.User == "u" && r.Temperature == nil
			}},
		{body: `{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/jpeg;base64,AAAA"}},{"type":"image_url","image_url":{"url":"https://x/y.png"}}]}]}`,
			check: func(r *dialect.Request) bool {
				c := r.Messages[0].Content
				return c[0].Image.MediaType == "image/jpeg" && c[0].Image.Data == "AAAA" && c[1].Image.URL == "https://x/y.png"
			}},
		{body: `{"model":"m","messages":[{"role":"assistant","tool_calls":[{"id":"a","function":{"name":"f","arguments":"[1]"}}]}]}`, err: "not a JSON object"},
		{body: `{"model":"m","messages":[{"role":"function","content":"x"}]}`, err: "not supported"},
		{body: `{"model":"m","messages":[{"role":"user","content":[{"type":"input_audio"}]}]}`, err: "input_audio"},
		{body: `{"model":"m","messages":[{"role":"tool","content":"x"}]}`, err: "tool_call_id"},
		{body: `[1]`, err: "not a JSON object"},
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
	temp := 0.5
	r := &dialect.Request{Model: "m", Stream: true, MaxTokens: 100, Temperature: &temp,
		System: []dialect.Block{{Kind: dialect.BlockText, Text: "S", CacheControl: []byte(`{"type":"ephemeral"}`)}},
		Messages: []dialect.Message{
			{Role: dialect.RoleUser, Content: []dialect.Block{{Kind: dialect.BlockText, Text: "q"}, {Kind: dialect.BlockImage, Image: &dialect.Image{MediaType: "image/png", Data: "AAAA"}}}},
			{Role: dialect.RoleAssistant, Content: []dialect.Block{{Kind: dialect.BlockThinking, Text: "t", Signature: "s"}, {Kind: dialect.BlockToolUse, ToolID: "c1", ToolName: "f", Input: []byte(`{"a":1}`)}}},
			{Role: dialect.RoleUser, Content: []dialect.Block{{Kind: dialect.BlockToolResult, ToolID: "c1", Content: []dialect.Block{{Kind: dialect.BlockText, Text: "ok"}}}, {Kind: dialect.BlockText, Text: "next"}}},
		},
		Tools:      []dialect.Tool{{Name: "f", Schema: []byte(`{"type":"object"}`)}},
		ToolChoice: &dialect.ToolChoice{Mode: dialect.ToolAny, NoParallel: true},
		TopK:       new(int64),
	}
	b, err := Codec{}.EncodeRequest(nil, r)
	if err != nil || !gjson.ValidBytes(b) {
		t.Fatalf("%v %s", err, b)
	}
	for path, want := range map[string]string{
		"messages.0.role": "system", "messages.0.content": "S",
		"messages.1.content.1.image_url.url": "data:image/png;base64,AAAA",
		"messages.2.tool_calls.0.id":         "c1", "messages.2.tool_calls.0.function.arguments": `{"a":1}`,
		"messages.3.role": "tool", "messages.3.tool_call_id": "c1", "messages.3.content": "ok",
		"messages.4.content": "next", "tool_choice": "required", "parallel_tool_calls": "false",
		"stream_options.include_usage": "true", "max_completion_tokens": "100", "temperature": "0.5",
	} {
		if got := gjson.GetBytes(b, path).String(); got != want {
			t.Errorf("%s = %q, want %q in %s", path, got, want, b)
		}
	}
	if gjson.GetBytes(b, "messages.2.reasoning_content").Exists() || !reflect.DeepEqual(r.Dropped, []string{"cache_control", "thinking"}) ||
		!reflect.DeepEqual(r.Unsupported, []string{"top_k"}) {
		t.Errorf("dropped %q, unsupported %q", r.Dropped, r.Unsupported)
	}
}

func TestStreamDecoder(t *testing.T) {
	chunk := func(choice string) string {
		return `data: {"id":"c1","model":"m","choices":[` + choice + `]}` + "\n\n"
	}
	stream := chunk(`{"index":0,"delta":{"role":"assistant","reasoning_content":"th"}}`) +
		chunk(`{"index":0,"delta":{"content":"Hi \"you\""}}`) +
		chunk(`{"index":0,"delta":{"tool_calls":[{"index":0,"id":"a","function":{"name":"f","arguments":"{"}},{"index":1,"id":"b","function":{"name":"g","arguments":"["}}]}}`) +
		chunk(`{"index":0,"delta":{},"finish_reason":"length"}`) +
		`data: {"id":"c1","choices":[],"usage":{"prompt_tokens":10,"completion_tokens":4,"prompt_tokens_details":{"cached_tokens":6}}}` + "\n\n" +
		"data: [DONE]\n\n"
	d := Codec{}.NewStreamDecoder()
	var got []string
	var ev dialect.Event
	for _, piece := range strings.SplitAfter(stream, "}") { // cut anywhere
		d.Feed([]byte(piece))
		for d.Next(&ev) {
			s := []string{"", "start", "block", "delta", "stop-block", "stop", "error"}[ev.Kind]
			switch ev.Kind {
			case dialect.EventBlockStart:
				s += ":" + string(rune('0'+ev.Index)) + ":" + ev.Block.ToolID
			case dialect.EventDelta:
				s += ":" + string(rune('0'+ev.Index)) + ":" + string(ev.Text)
			case dialect.EventBlockStop:
				s += ":" + string(rune('0'+ev.Index))
			case dialect.EventStop:
				s += ":" + string(ev.StopReason)
				if ev.Usage.Input != 4 || ev.Usage.CacheRead != 6 || ev.Usage.Output != 4 || !ev.HasUsage {
					t.Errorf("usage %+v", ev.Usage)
				}
			}
			got = append(got, s)
		}
	}
	want := []string{"start", "block:0:", "delta:0:th", "stop-block:0", "block:1:", `delta:1:Hi "you"`, "stop-block:1",
		"block:2:a", "delta:2:{", "block:3:b", "delta:3:[", "stop-block:2", "stop-block:3", "stop:max_tokens"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("events\n got %q\nwant %q", got, want)
	}
	if d.End(&ev) {
		t.Error("a complete stream reported cut")
	}
	d = Codec{}.NewStreamDecoder()
	d.Feed([]byte(chunk(`{"index":0,"delta":{"content":"x"}}`)))
	for d.Next(&ev) {
	}
	if !d.End(&ev) || ev.Kind != dialect.EventError || ev.Err.Kind != dialect.ErrCut {
		t.Errorf("cut stream: %+v", ev)
	}
	d = Codec{}.NewStreamDecoder()
	d.Feed([]byte(`data: {"error":{"message":"boom","type":"server_error"}}` + "\n\ndata: {oops\n\n"))
	if !d.Next(&ev) || ev.Kind != dialect.EventError || ev.Err.Message != "boom" || d.Next(&ev) {
		t.Errorf("error event: %+v", ev)
	}
}

func TestErrors(t *testing.T) {
	e := Codec{}.DecodeError(429, http.Header{"Retry-After": {"12"}}, []byte(`{"error":{"message":"slow down","type":"requests","code":"rate_limit_exceeded"}}`))
	if e.Kind != dialect.ErrRateLimit || e.RetryAfter != 12*time.Second || e.Message != "slow down" {
		t.Fatalf("%+v", e)
	}
	for i, tc := range []struct {
		e            dialect.Error
		status       int
		typ, message string
	}{
		{dialect.Error{Status: 429, Kind: dialect.ErrRateLimit, Message: "m"}, 429, "rate_limit_error", "m"},
		{dialect.Error{Status: 529, Kind: dialect.ErrOverloaded, Message: "o"}, 529, "server_error", "o"},
		{dialect.Error{Status: 400, Kind: dialect.ErrInvalidRequest, Message: "bad \"x\"", Param: "x"}, 400, "invalid_request_error", `bad "x"`},
	} {
		status, body := Codec{}.EncodeError(&tc.e)
		if status != tc.status || gjson.GetBytes(body, "error.type").Str != tc.typ || gjson.GetBytes(body, "error.message").Str != tc.message {
			t.Errorf("Test %d: %d %s", i, status, body)
		}
	}
}
