package responses

import (
	"reflect"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/caddy-air/caddy-air/billing"
	"github.com/caddy-air/caddy-air/dialect"
)

func TestDecodeRequest(t *testing.T) {
	for i, tc := range []struct {
		body  string
		check func(r *dialect.Request) bool
		err   string
	}{
		{body: `{"model":"m","instructions":"Be terse.","input":"Hi"}`,
			check: func(r *dialect.Request) bool {
				return r.Model == "m" && len(r.System) == 1 && r.System[0].Text == "Be terse." && len(r.Messages) == 1 &&
					r.Messages[0].Role == dialect.RoleUser && r.Messages[0].Content[0].Text == "Hi" && r.StreamUsage
			}},
		// A Codex-style turn: developer message, user message with an
		// image, the assistant's reasoning, text and two calls, their
		// outputs; consecutive items of a role form one message.
		{body: `{"model":"m","input":[{"type":"message","role":"developer","content":[{"type":"input_text","text":"D"}]},
			{"role":"user","content":[{"type":"input_text","text":"See"},{"type":"input_image","image_url":"data:image/png;base64,iVBO","detail":"auto"}]},
			{"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"hm"},{"type":"summary_text","text":"m"}],"encrypted_content":"c2ln"},
			{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Checking","annotations":[]}]},
			{"type":"function_call","id":"fc_1","call_id":"call_1","name":"w","arguments":"{\"city\":\"Oslo\"}"},
			{"type":"function_call","call_id":"call_2","name":"w","arguments":""},
			{"type":"function_call_output","call_id":"call_1","output":"rain"},
			{"type":"function_call_output","call_id":"call_2","output":[{"type":"input_text","text":"sun"}]}]}`,
			check: func(r *dialect.Request) bool {
				if len(r.System) != 1 || r.System[0].Text != "D" || len(r.Messages) != 3 {
					return false
				}
				u, a, res := r.Messages[0].Content, r.Messages[1].Content, r.Messages[2].Content
				return u[1].Image.MediaType == "image/png" && u[1].Image.Data == "iVBO" &&
					len(a) == 4 && a[0].Kind == dialect.BlockThinking && a[0].Text == "hmm" && a[0].Signature == "c2ln" &&
					a[1].Text == "Checking" && a[2].ToolID == "call_1" && string(a[2].Input) == `{"city":"Oslo"}` && string(a[3].Input) == "{}" &&
					r.Messages[2].Role == dialect.RoleUser && res[0].ToolID == "call_1" && res[0].Content[0].Text == "rain" && res[1].Content[0].Text == "sun"
			}},
		// Redacted thinking, and reasoning_text content over the summary.
		{body: `{"model":"m","input":[{"type":"reasoning","summary":[],"encrypted_content":"redacted_thinking:ZGF0YQ=="},{"type":"reasoning","summary":[{"type":"summary_text","text":"short"}],"content":[{"type":"reasoning_text","text":"long"}],"encrypted_content":"s"}]}`,
			check: func(r *dialect.Request) bool {
				c := r.Messages[0].Content
				return c[0].Kind == dialect.BlockRedactedThinking && c[0].Data == "ZGF0YQ==" && c[1].Text == "long" && c[1].Signature == "s"
			}},
		{body: `{"model":"m","input":"q","tools":[{"type":"function","name":"f","description":"d","parameters":{"type":"object"},"strict":true},{"type":"web_search_preview"}],
			"tool_choice":{"type":"function","name":"f"},"parallel_tool_calls":false,"max_output_tokens":99,"temperature":0.2,"top_p":0.9,"stream":true,
			"text":{"format":{"type":"json_schema","name":"n","schema":{"type":"object"},"strict":true}},"reasoning":{"effort":"high","summary":"auto"},
			"store":true,"prompt_cache_key":"k","include":["reasoning.encrypted_content"],"user":"u","previous_response_id":null}`,
			check: func(r *dialect.Request) bool {
				return len(r.Tools) == 1 && r.Tools[0].Description == "d" && reflect.DeepEqual(r.Unsupported, []string{"tools.web_search_preview"}) &&
					r.ToolChoice.Mode == dialect.ToolNamed && r.ToolChoice.Name == "f" && r.ToolChoice.NoParallel && r.MaxTokens == 99 &&
					*r.Temperature == 0.2 && *r.TopP == 0.9 && r.Stream && r.ResponseFormat.Type == "json_schema" && r.ResponseFormat.Name == "n" &&
					r.ResponseFormat.Strict && r.Reasoning.Effort == "high" && reflect.DeepEqual(r.Dropped, []string{"store", "prompt_cache_key"}) && r.User == "u"
			}},
		{body: `{"model":"m","input":"q","text":{"format":{"type":"json_object"},"verbosity":"low"},"reasoning":{"effort":"none"},"tool_choice":"required","truncation":"auto","include":["message.output_text.logprobs"],"seed":1}`,
			check: func(r *dialect.Request) bool {
				return r.ResponseFormat.Type == "json_object" && r.Reasoning.Disabled && r.ToolChoice.Mode == dialect.ToolAny &&
					reflect.DeepEqual(r.Unsupported, []string{"text.verbosity", "truncation", "include", "seed"})
			}},
		{body: `{"model":"m","input":[{"type":"function_call_output","call_id":"call_9","output":"x"}]}`, err: `no function_call item with call_id "call_9"`},
		{body: `{"model":"m","input":[{"type":"function_call","call_id":"c","name":"f","arguments":"[1]"}]}`, err: "not a JSON object"},
		{body: `{"model":"m","input":[{"type":"item_reference","id":"msg_1"}]}`, err: "item_reference"},
		{body: `{"model":"m","input":[{"type":"web_search_call","id":"ws_1"}]}`, err: `"web_search_call"`},
		{body: `{"model":"m","input":[{"role":"user","content":[{"type":"input_file","file_id":"f"}]}]}`, err: `"input_file"`},
		{body: `{"model":"m","input":[{"role":"user","content":[{"type":"input_image","file_id":"f"}]}]}`, err: "file_id"},
		{body: `{"model":"m","input":[{"role":"tool","content":"x"}]}`, err: "not supported"},
		{body: `{"model":"m","input":3}`, err: "string or an array"},
		// Found by FuzzDecodeRequest: no schema made an invalid upstream body.
		{body: `{"model":"m","input":"q","text":{"format":{"type":"json_schema","name":"n"}}}`, err: "needs a schema object"},
		{body: `[1]`, err: "not a JSON object"},
		{body: `{"model":"m","reasoning":{"effort":"low"},"input":"q","reasoning":{"effort":"high"}}`, err: "reasoning: the member is repeated"},
		{body: `{"model":"m","input":[{"role":"user","content":"a"},{"type":"function_call","call_id":"a","name":"f","call_id":"b"}]}`, err: "input[1].call_id: the member is repeated"},
		{body: `{"model":"m","input":"q","tools":[{"type":"function","name":"f","parameters":{"type":"object","type":"string"}}]}`, err: "tools[0].parameters.type: the member is repeated"},
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

func TestEncodeResponse(t *testing.T) {
	r := &dialect.Response{ID: "msg_01abc", Model: "c", StopReason: dialect.StopToolUse, UsageReported: true,
		Usage: billing.Usage{Input: 10, CacheRead: 30, CacheCreation: 5, Output: 7, Reasoning: 2},
		Content: []dialect.Block{
			{Kind: dialect.BlockThinking, Text: "hmm", Signature: "sig"},
			{Kind: dialect.BlockRedactedThinking, Data: "opaque"},
			{Kind: dialect.BlockText, Text: "Checking"},
			{Kind: dialect.BlockToolUse, ToolID: "toolu_1", ToolName: "w", Input: []byte(`{"city":"Oslo"}`)},
		}}
	b, err := Codec{}.EncodeResponse(nil, r)
	if err != nil || !gjson.ValidBytes(b) {
		t.Fatalf("%v %s", err, b)
	}
	v := gjson.ParseBytes(b)
	for path, want := range map[string]string{
		"id": "resp_01abc", "object": "response", "status": "completed", "model": "c", "store": "false",
		"output.#": "4", "output.0.type": "reasoning", "output.0.id": "rs_01abc_0", "output.0.summary.0.text": "hmm", "output.0.encrypted_content": "sig",
		"output.1.encrypted_content": "redacted_thinking:opaque", "output.1.summary.#": "0",
		"output.2.type": "message", "output.2.role": "assistant", "output.2.content.0.type": "output_text", "output.2.content.0.text": "Checking",
		"output.3.type": "function_call", "output.3.call_id": "toolu_1", "output.3.name": "w", "output.3.arguments": `{"city":"Oslo"}`, "output.3.id": "fc_01abc_3",
		"usage.input_tokens": "45", "usage.input_tokens_details.cached_tokens": "30", "usage.input_tokens_details.cache_write_tokens": "5",
		"usage.output_tokens": "7", "usage.output_tokens_details.reasoning_tokens": "2", "usage.total_tokens": "52", "incomplete_details": "",
	} {
		if got := v.Get(path).String(); got != want {
			t.Errorf("%s = %q, want %q in %s", path, got, want, b)
		}
	}
	r = &dialect.Response{ID: "x", StopReason: dialect.StopMaxTokens, Content: []dialect.Block{{Kind: dialect.BlockText, Text: "cu"}}}
	b, _ = Codec{}.EncodeResponse(nil, r)
	if v := gjson.ParseBytes(b); v.Get("status").Str != "incomplete" || v.Get("incomplete_details.reason").Str != "max_output_tokens" || v.Get("usage").Type != gjson.Null {
		t.Errorf("max tokens: %s", b)
	}
}

// events decodes a Responses SSE stream, checking that every event's
// name is its type and that sequence numbers count from 0.
func events(t *testing.T, s string) []gjson.Result {
	t.Helper()
	var out []gjson.Result
	for _, ev := range strings.Split(strings.TrimSuffix(s, "\n\n"), "\n\n") {
		name, data, ok := strings.Cut(ev, "\ndata: ")
		v := gjson.Parse(data)
		if !ok || !gjson.Valid(data) || "event: "+v.Get("type").Str != name || v.Get("sequence_number").Int() != int64(len(out)) {
			t.Fatalf("event %d: %q", len(out), ev)
		}
		out = append(out, v)
	}
	return out
}

func TestStreamEncoder(t *testing.T) {
	enc := Codec{}.NewStreamEncoder(&dialect.Request{})
	var b []byte
	for _, ev := range []dialect.Event{
		{Kind: dialect.EventStart, ID: "msg_9", Model: "c"},
		{Kind: dialect.EventBlockStart, Index: 0, Block: dialect.Block{Kind: dialect.BlockThinking}},
		{Kind: dialect.EventDelta, Index: 0, Delta: dialect.DeltaThinking, Text: []byte("hm")},
		{Kind: dialect.EventDelta, Index: 0, Delta: dialect.DeltaThinking, Text: []byte("m")},
		{Kind: dialect.EventDelta, Index: 0, Delta: dialect.DeltaSignature, Text: []byte("sig")},
		{Kind: dialect.EventBlockStop, Index: 0},
		{Kind: dialect.EventBlockStart, Index: 1, Block: dialect.Block{Kind: dialect.BlockText}},
		{Kind: dialect.EventDelta, Index: 1, Delta: dialect.DeltaText, Text: []byte("He\"y")},
		{Kind: dialect.EventBlockStop, Index: 1},
		{Kind: dialect.EventBlockStart, Index: 2, Block: dialect.Block{Kind: dialect.BlockToolUse, ToolID: "toolu_1", ToolName: "w"}},
		{Kind: dialect.EventDelta, Index: 2, Delta: dialect.DeltaJSON, Text: []byte(`{"ci`)},
		{Kind: dialect.EventDelta, Index: 2, Delta: dialect.DeltaJSON, Text: []byte(`ty":"Oslo"}`)},
		{Kind: dialect.EventBlockStop, Index: 2},
		{Kind: dialect.EventStop, StopReason: dialect.StopToolUse, HasUsage: true, Usage: billing.Usage{Input: 3, CacheRead: 4, Output: 5}},
	} {
		b = enc.Encode(b, &ev)
	}
	evs := events(t, string(b))
	var names []string
	for _, ev := range evs {
		names = append(names, ev.Get("type").Str)
	}
	want := []string{"response.created", "response.in_progress",
		"response.output_item.added", "response.reasoning_summary_part.added", "response.reasoning_summary_text.delta", "response.reasoning_summary_text.delta",
		"response.reasoning_summary_text.done", "response.reasoning_summary_part.done", "response.output_item.done",
		"response.output_item.added", "response.content_part.added", "response.output_text.delta", "response.output_text.done", "response.content_part.done", "response.output_item.done",
		"response.output_item.added", "response.function_call_arguments.delta", "response.function_call_arguments.delta", "response.function_call_arguments.done", "response.output_item.done",
		"response.completed"}
	if !reflect.DeepEqual(names, want) {
		t.Fatalf("events\n got %q\nwant %q", names, want)
	}
	for i, c := range []struct {
		ev         int
		path, want string
	}{
		{0, "response.id", "resp_9"}, {0, "response.status", "in_progress"},
		{8, "item.encrypted_content", "sig"}, {8, "item.summary.0.text", "hmm"}, {8, "output_index", "0"},
		{11, "item_id", "msg_9_1"}, {11, "output_index", "1"}, {11, "content_index", "0"}, {11, "delta", `He"y`},
		{12, "text", `He"y`}, {14, "item.content.0.text", `He"y`}, {14, "item.status", "completed"},
		{15, "item.call_id", "toolu_1"}, {15, "item.status", "in_progress"}, {16, "item_id", "fc_9_2"}, {16, "output_index", "2"},
		{18, "arguments", `{"city":"Oslo"}`}, {19, "item.arguments", `{"city":"Oslo"}`},
		{20, "response.status", "completed"}, {20, "response.output.#", "3"}, {20, "response.output.2.call_id", "toolu_1"},
		{20, "response.usage.input_tokens", "7"}, {20, "response.usage.input_tokens_details.cached_tokens", "4"}, {20, "response.usage.output_tokens", "5"},
	} {
		if got := evs[c.ev].Get(c.path).String(); got != c.want {
			t.Errorf("Test %d: event %d %s = %q, want %q", i, c.ev, c.path, got, c.want)
		}
	}
	// Nothing but an error may carry a top-level error member: the SDKs
	// take one as the stream's failure.
	for i, ev := range evs {
		if ev.Get("error").Exists() {
			t.Errorf("event %d has an error member: %s", i, ev.Raw)
		}
	}
}

func TestStreamEncoderEnds(t *testing.T) {
	for i, tc := range []struct {
		last  dialect.Event
		types []string
		check map[string]string
	}{
		{dialect.Event{Kind: dialect.EventStop, StopReason: dialect.StopMaxTokens},
			[]string{"response.incomplete"}, map[string]string{"response.status": "incomplete", "response.incomplete_details.reason": "max_output_tokens"}},
		{dialect.Event{Kind: dialect.EventError, Err: &dialect.Error{Status: 502, Kind: dialect.ErrCut, Message: "broke off"}},
			[]string{"response.failed", "error"}, map[string]string{"response.error.code": "upstream_cut", "error.message": "broke off", "code": "upstream_cut"}},
		{dialect.Event{Kind: dialect.EventError, Err: &dialect.Error{Status: 529, Kind: dialect.ErrOverloaded, Message: "Overloaded"}},
			[]string{"response.failed", "error"}, map[string]string{"error.type": "server_error", "error.code": "overloaded"}},
	} {
		enc := Codec{}.NewStreamEncoder(&dialect.Request{})
		b := enc.Encode(nil, &dialect.Event{Kind: dialect.EventStart, ID: "m"})
		b = enc.Encode(b, &dialect.Event{Kind: dialect.EventBlockStart, Block: dialect.Block{Kind: dialect.BlockText}})
		b = enc.Encode(b, &dialect.Event{Kind: dialect.EventDelta, Delta: dialect.DeltaText, Text: []byte("cu")})
		b = enc.Encode(b, &tc.last)
		b = enc.Encode(b, &tc.last) // after the end, nothing
		evs := events(t, string(b))[5:]
		var types []string
		got := map[string]string{}
		for _, ev := range evs {
			types = append(types, ev.Get("type").Str)
			for p := range tc.check {
				if v := ev.Get(p); v.Exists() {
					got[p] = v.String()
				}
			}
		}
		if !reflect.DeepEqual(types, tc.types) || !reflect.DeepEqual(got, tc.check) {
			t.Errorf("Test %d: %q %v\n%s", i, types, got, b)
		}
	}
}

func TestEncodeError(t *testing.T) {
	status, b := Codec{}.EncodeError(&dialect.Error{Status: 429, Kind: dialect.ErrRateLimit, Message: "slow down"})
	if v := gjson.ParseBytes(b); status != 429 || v.Get("error.type").Str != "rate_limit_error" || v.Get("error.message").Str != "slow down" {
		t.Errorf("%d %s", status, b)
	}
}
