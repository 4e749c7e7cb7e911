package reqscan

import (
	"github.com/caddy-air/caddy-air/dialect"
	"net/http"
	"testing"

	"github.com/tidwall/gjson"
)

func TestInspectChat(t *testing.T) {
	for i, tc := range []struct {
		body  string
		param string // "" with wantErr false means accepted
		err   bool
		want  dialect.Inspected
	}{
		{body: `{"model":"qwen-plus","messages":[{"role":"user","content":"hi"}]}`, want: dialect.Inspected{Model: "qwen-plus", PromptBytes: dialect.MessageOverhead + 2}},
		{body: `{"model":"m","messages":[{}],"stream":true,"stream_options":{"include_usage":true},"max_tokens":100}`, want: dialect.Inspected{Model: "m", Stream: true, IncludeUsage: true, MaxTokens: 100}},
		{body: `{"model":"m","messages":[{}],"stream":true,"stream_options":{"include_usage":false}}`, want: dialect.Inspected{Model: "m", Stream: true}},
		{body: `{"model":"m","messages":[{}],"max_tokens":100,"max_completion_tokens":50}`, want: dialect.Inspected{Model: "m", MaxTokens: 50}},
		{body: `{"model":"m","messages":[{}],"max_tokens":1e3,"stream":null,"temperature":null}`, want: dialect.Inspected{Model: "m", MaxTokens: 1000}},
		{body: `{"model":"m","messages":[{}],"temperature":0,"top_p":1,"frequency_penalty":-2,"presence_penalty":2,"stop":["a","b","c","d"]}`, want: dialect.Inspected{Model: "m"}},
		{body: `{"model":"m","messages":[{}],"stop":"END","enable_thinking":true,"thinking_budget":50,"top_k":3,"x":{"y":[1,{"z":null}]}}`, want: dialect.Inspected{Model: "m"}},
		{body: `{"mod\u0065l":"m","messages":[{}]}`, want: dialect.Inspected{Model: "m"}},
		{body: `not json`, err: true},
		{body: `[1,2]`, err: true},
		{body: `{"model":"m","messages":[{}]`, err: true},
		{body: `{"messages":[{}]}`, err: true, param: "model"},
		{body: `{"model":42,"messages":[{}]}`, err: true, param: "model"},
		{body: `{"model":"","messages":[{}]}`, err: true, param: "model"},
		{body: `{"model":"cheap","messages":[{}],"model":"expensive"}`, err: true, param: "model"},
		{body: `{"model":"cheap","messages":[{}],"mod\u0065l":"expensive"}`, err: true, param: "model"},
		{body: `{"model":"m"}`, err: true, param: "messages"},
		{body: `{"model":"m","messages":"hi"}`, err: true, param: "messages"},
		{body: `{"model":"m","messages":[{}],"stop":["a","b","c","d","e"]}`, err: true, param: "stop"},
		{body: `{"model":"m","messages":[{}],"stop":["a",1]}`, err: true, param: "stop"},
		{body: `{"model":"m","messages":[{}],"stop":7}`, err: true, param: "stop"},
		{body: `{"model":"m","messages":[{}],"temperature":2}`, err: true, param: "temperature"},
		{body: `{"model":"m","messages":[{}],"temperature":-0.1}`, err: true, param: "temperature"},
		{body: `{"model":"m","messages":[{}],"temperature":"1"}`, err: true, param: "temperature"},
		{body: `{"model":"m","messages":[{}],"top_p":0}`, err: true, param: "top_p"},
		{body: `{"model":"m","messages":[{}],"top_p":1.01}`, err: true, param: "top_p"},
		{body: `{"model":"m","messages":[{}],"frequency_penalty":2.5}`, err: true, param: "frequency_penalty"},
		{body: `{"model":"m","messages":[{}],"presence_penalty":-2.01}`, err: true, param: "presence_penalty"},
		{body: `{"model":"m","messages":[{}],"max_tokens":0}`, err: true, param: "max_tokens"},
		{body: `{"model":"m","messages":[{}],"max_tokens":1.5}`, err: true, param: "max_tokens"},
		{body: `{"model":"m","messages":[{}],"max_tokens":"10"}`, err: true, param: "max_tokens"},
		{body: `{"model":"m","messages":[{}],"max_completion_tokens":-3}`, err: true, param: "max_completion_tokens"},
		{body: `{"model":"m","messages":[{}],"stream":"true"}`, err: true, param: "stream"},
		{body: `{"model":"m","messages":[{}],"stream":true,"stream":false}`, err: true, param: "stream"},
	} {
		got, e := InspectChat([]byte(tc.body), 0)
		if tc.err {
			if e == nil {
				t.Errorf("Test %d: %s: accepted, want a 400 on %q", i, tc.body, tc.param)
				continue
			}
			if e.Status != http.StatusBadRequest {
				t.Errorf("Test %d: status %d, want 400", i, e.Status)
			}
			var param string
			if e.Param != nil {
				param = *e.Param
			}
			if param != tc.param {
				t.Errorf("Test %d: %s: param %q, want %q (%s)", i, tc.body, param, tc.param, e.Message)
			}
			continue
		}
		if e != nil {
			t.Errorf("Test %d: %s: rejected: %s", i, tc.body, e.Message)
			continue
		}
		if tc.want.PromptBytes == 0 {
			got.PromptBytes = 0
		}
		checkSpans(t, tc.body, &got)
		if got != tc.want {
			t.Errorf("Test %d: got %+v, want %+v", i, got, tc.want)
		}
	}
}

func TestInspectMessages(t *testing.T) {
	for i, tc := range []struct {
		body  string
		param string
		err   bool
		want  dialect.Inspected
	}{
		{body: `{"model":"claude","max_tokens":1024,"messages":[{"role":"user","content":"Hello"}],"stream":true,"thinking":{"type":"enabled","budget_tokens":2000}}`,
			want: dialect.Inspected{Model: "claude", Stream: true, MaxTokens: 1024}},
		{body: `{"model":"claude","messages":[{}],"temperature":5}`, want: dialect.Inspected{Model: "claude"}},
		{body: `{`, err: true},
		{body: `{"messages":[{}]}`, err: true, param: "model"},
		{body: `{"model":"c","messages":{}}`, err: true, param: "messages"},
		{body: `{"model":"c","messages":[{}],"stream":1}`, err: true, param: "stream"},
	} {
		got, e := InspectMessages([]byte(tc.body), 0)
		if tc.err {
			if e == nil {
				t.Errorf("Test %d: accepted, want an error", i)
				continue
			}
			var param string
			if e.Param != nil {
				param = *e.Param
			}
			if param != tc.param || e.Status != http.StatusBadRequest {
				t.Errorf("Test %d: got %d %q, want 400 %q", i, e.Status, param, tc.param)
			}
			continue
		}
		if e != nil {
			t.Errorf("Test %d: rejected: %s", i, e.Message)
			continue
		}
		got.PromptBytes = 0
		checkSpans(t, tc.body, &got)
		if got != tc.want {
			t.Errorf("Test %d: got %+v, want %+v", i, got, tc.want)
		}
	}
}

func TestPromptBytes(t *testing.T) {
	for i, tc := range []struct {
		body string
		want int
	}{
		{`{"model":"m","messages":[{"role":"user","content":"abcd"}]}`, dialect.MessageOverhead + 4},
		{`{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"abcd"},{"type":"image_url","image_url":{"url":"data:image/png;base64,AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"}}]}]}`, dialect.MessageOverhead + 4 + dialect.MediaBlockBytes},
		{`{"model":"m","messages":[{"role":"assistant","content":null,"tool_calls":[{"id":"1"}]}],"tools":[{"a":1}]}`, dialect.MessageOverhead + len(`[{"id":"1"}]`) + len(`[{"a":1}]`)},
	} {
		in, e := InspectChat([]byte(tc.body), 0)
		if e != nil {
			t.Fatalf("Test %d: %s", i, e.Message)
		}
		if in.PromptBytes != tc.want {
			t.Errorf("Test %d: PromptBytes %d, want %d", i, in.PromptBytes, tc.want)
		}
	}
	in, e := InspectMessages([]byte(`{"model":"c","system":"be brief","messages":[{"role":"user","content":[{"type":"tool_result","content":"12345678"}]}]}`), 0)
	if e != nil {
		t.Fatal(e.Message)
	}
	if want := len("be brief") + dialect.MessageOverhead + 8; in.PromptBytes != want {
		t.Errorf("anthropic PromptBytes %d, want %d", in.PromptBytes, want)
	}
}

// checkSpans checks that in locates the body's model, stream_options and
// include_usage values, then clears them for comparison.
func checkSpans(t *testing.T, body string, in *dialect.Inspected) {
	t.Helper()
	for _, c := range []struct {
		name string
		at   dialect.Span
	}{{"model", in.Located.Model}, {"stream_options", in.Located.StreamOptions}, {"stream_options.include_usage", in.Located.IncludeUsage}} {
		want := gjson.Get(body, c.name)
		if got := body[c.at.At:c.at.End]; got != want.Raw || c.at.At != want.Index {
			t.Errorf("%s: %s located at %v, %q; want %q at %d", body, c.name, c.at, got, want.Raw, want.Index)
		}
	}
	in.Located = dialect.Located{}
}
