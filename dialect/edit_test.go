package dialect_test

import (
	"bytes"
	"github.com/caddy-air/caddy-air/dialect"
	"github.com/caddy-air/caddy-air/dialect/anthropic"
	"github.com/caddy-air/caddy-air/dialect/openai"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// extBody is a client body full of extension fields, odd whitespace and
// escapes, that must reach the upstream byte for byte.
const extBody = "{ \"model\" :\t\"qwen3-max\",\n  \"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"caf\\u00e9 \\ud83d\\ude00 \\\"quoted\\\"\",\"cache_control\":{\"type\":\"ephemeral\"}}]}],\r\n" +
	"\"enable_thinking\":true, \"thinking_budget\":  4096,\"enable_search\":true,\"search_options\":{\"forced_search\":true,\"search_strategy\":\"pro\"},\n" +
	"\"seed\":12345678901234567890,\"top_k\":20,\"logprobs\":true,\"top_logprobs\":3,\"enable_context_caching\":true,\"temperature\":0.70,\n" +
	"\"vendor\":{\"nested\":{\"deep\":[1,2.50,-0e0,{\"k\":null}],\"s\":\"\\/path\"}}  %s}\n\t"

func TestPrepareBodyPassThrough(t *testing.T) {
	body := []byte(strings.Replace(extBody, "%s", "", 1))
	in, e := openai.InspectChat(body, 0)
	if e != nil {
		t.Fatal(e.Message)
	}
	for i, model := range []string{"", "qwen3-max"} {
		out, injected, err := dialect.PrepareBody(openai.Wire, body, in, model)
		if err != nil || injected {
			t.Fatalf("Test %d: err=%v injected=%v", i, err, injected)
		}
		if !bytes.Equal(out, body) {
			t.Errorf("Test %d: body changed:\n%s", i, out)
		}
	}
}

func TestPrepareBodyEdits(t *testing.T) {
	for i, tc := range []struct {
		proto dialect.Wire
		body  string
		model string
		want  string
		inj   bool
	}{
		{ // model replaced, nothing else touched
			body:  strings.Replace(extBody, "%s", "", 1),
			model: "qwen3-max-2025-09-23",
			want:  strings.Replace(strings.Replace(extBody, "%s", "", 1), `"qwen3-max"`, `"qwen3-max-2025-09-23"`, 1),
		},
		{ // stream without stream_options: appended before the last brace
			body: strings.Replace(extBody, "%s", `,"stream":true`, 1),
			want: strings.Replace(extBody, "%s", `,"stream":true,"stream_options":{"include_usage":true}`, 1),
			inj:  true,
		},
		{ // both edits
			body:  `{"stream":true,"model":"a","messages":[{"role":"user","content":"x"}]}`,
			model: `b"\`,
			want:  `{"stream":true,"model":"b\"\\","messages":[{"role":"user","content":"x"}],"stream_options":{"include_usage":true}}`,
			inj:   true,
		},
		{
			body: `{"model":"a","messages":[{"role":"user","content":"x"}],"stream":true,"stream_options":null}`,
			want: `{"model":"a","messages":[{"role":"user","content":"x"}],"stream":true,"stream_options":{"include_usage":true}}`,
			inj:  true,
		},
		{
			body: `{"model":"a","messages":[{"role":"user","content":"x"}],"stream":true,"stream_options":{ }}`,
			want: `{"model":"a","messages":[{"role":"user","content":"x"}],"stream":true,"stream_options":{"include_usage":true }}`,
			inj:  true,
		},
		{
			body: `{"model":"a","messages":[{"role":"user","content":"x"}],"stream":true,"stream_options":{"x":1}}`,
			want: `{"model":"a","messages":[{"role":"user","content":"x"}],"stream":true,"stream_options":{"include_usage":true,"x":1}}`,
			inj:  true,
		},
		{
			body: `{"model":"a","messages":[{"role":"user","content":"x"}],"stream":true,"stream_options":{"include_usage": false ,"x":1}}`,
			want: `{"model":"a","messages":[{"role":"user","content":"x"}],"stream":true,"stream_options":{"include_usage": true ,"x":1}}`,
			inj:  true,
		},
		{ // already asked for
			body: `{"model":"a","messages":[{"role":"user","content":"x"}],"stream":true,"stream_options":{"include_usage":true}}`,
			want: `{"model":"a","messages":[{"role":"user","content":"x"}],"stream":true,"stream_options":{"include_usage":true}}`,
		},
		{ // escaped key found and edited
			body:  `{"mod\u0065l":"a","messages":[{"role":"user","content":"x"}]}`,
			model: "b",
			want:  `{"mod\u0065l":"b","messages":[{"role":"user","content":"x"}]}`,
		},
		{ // a shorter model and a longer stream_options: runs move both ways
			body:  `{"model":"a-long-model-name","messages":[{"role":"user","content":"x"}],"stream":true,"stream_options":null}`,
			model: "b",
			want:  `{"model":"b","messages":[{"role":"user","content":"x"}],"stream":true,"stream_options":{"include_usage":true}}`,
			inj:   true,
		},
		{ // a longer model and a shorter include_usage
			body:  `{"model":"a","messages":[{"role":"user","content":"x"}],"stream":true,"stream_options":{"include_usage":false,"x":1}}`,
			model: "a-long-model-name",
			want:  `{"model":"a-long-model-name","messages":[{"role":"user","content":"x"}],"stream":true,"stream_options":{"include_usage":true,"x":1}}`,
			inj:   true,
		},
		{ // a shorter model and a shorter include_usage
			body:  `{"model":"a-long-model-name","messages":[{"role":"user","content":"x"}],"stream":true,"stream_options":{"include_usage":false}}`,
			model: "b",
			want:  `{"model":"b","messages":[{"role":"user","content":"x"}],"stream":true,"stream_options":{"include_usage":true}}`,
			inj:   true,
		},
		{ // anthropic streams always carry usage: nothing injected
			proto: anthropic.Wire,
			body:  `{"model":"a","messages":[{"role":"user","content":"x"}],"stream":true}`,
			want:  `{"model":"a","messages":[{"role":"user","content":"x"}],"stream":true}`,
		},
	} {
		if tc.proto == nil {
			tc.proto = openai.Wire // the zero case: chat completions
		}
		inspect := openai.InspectChat
		if tc.proto == anthropic.Wire {
			inspect = anthropic.InspectMessages
		}
		in, e := inspect([]byte(tc.body), 0)
		if e != nil {
			t.Fatalf("Test %d: %s", i, e.Message)
		}
		out, inj, err := dialect.PrepareBody(tc.proto, []byte(tc.body), in, tc.model)
		if err != nil {
			t.Fatalf("Test %d: %v", i, err)
		}
		if string(out) != tc.want {
			t.Errorf("Test %d: got\n%s\nwant\n%s", i, out, tc.want)
		}
		if inj != tc.inj {
			t.Errorf("Test %d: injected=%v, want %v", i, inj, tc.inj)
		}
		if !gjson.ValidBytes(out) {
			t.Errorf("Test %d: output is not valid JSON", i)
		}
		if room := dialect.PrepareBodyRoom(tc.proto, in, tc.model); len(tc.want) > len(tc.body)+room {
			t.Errorf("Test %d: the edits add %d bytes, dialect.PrepareBodyRoom says at most %d", i, len(tc.want)-len(tc.body), room)
		}
		// In place: within the body's memory when the result fits its
		// capacity, in new memory otherwise.
		for _, slack := range []int{0, 64} {
			buf := append(make([]byte, 0, len(tc.body)+slack), tc.body...)
			out, inj, err := dialect.PrepareBodyInPlace(tc.proto, buf, in, tc.model)
			if err != nil || string(out) != tc.want || inj != tc.inj {
				t.Errorf("Test %d, in place with %d spare bytes: got %v %v\n%s\nwant\n%s", i, slack, err, inj, out, tc.want)
				continue
			}
			if inPlace := &out[:1][0] == &buf[:1][0]; inPlace != (len(tc.want) <= cap(buf)) {
				t.Errorf("Test %d, with %d spare bytes: edited in place: %v", i, slack, inPlace)
			}
		}
	}
}
