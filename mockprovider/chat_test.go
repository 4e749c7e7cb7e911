package mockprovider

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

const weatherTool = `[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"},"days":{"type":"integer"},"unit":{"type":"string","enum":["celsius","fahrenheit"]}}}}},
	{"type":"function","function":{"name":"other","parameters":{"type":"object","properties":{}}}}]`

func TestChatJSON(t *testing.T) {
	base := newServer(t, Config{})
	for i, tc := range []struct {
		body      string
		finish    string
		content   string // substring of the content
		reasoning bool
		tool      string
		usage     bool
	}{
		{body: `{"model":"mock-gpt","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Hello from Go"}]}`, finish: "stop", content: "Mock reply to: Hello from Go", usage: true},
		{body: `{"model":"mock-reasoner","messages":[{"role":"user","content":"Think please"}]}`, finish: "stop", content: "Think please", reasoning: true, usage: true},
		{body: `{"model":"qwen-plus","enable_thinking":true,"messages":[{"role":"user","content":"Think please"}]}`, finish: "stop", content: "Think please", reasoning: true, usage: true},
		{body: `{"model":"mock-reasoner","enable_thinking":false,"messages":[{"role":"user","content":"No thinking"}]}`, finish: "stop", content: "No thinking", usage: true},
		{body: `{"model":"mock-gpt","tools":` + weatherTool + `,"messages":[{"role":"user","content":"Weather in Paris?"}]}`, finish: "tool_calls", tool: "get_weather", usage: true},
		{body: `{"model":"mock-gpt","tools":` + weatherTool + `,"tool_choice":{"type":"function","function":{"name":"other"}},"messages":[{"role":"user","content":"x"}]}`, finish: "tool_calls", tool: "other", usage: true},
		{body: `{"model":"mock-gpt","tools":` + weatherTool + `,"tool_choice":"none","messages":[{"role":"user","content":"No tools"}]}`, finish: "stop", content: "No tools", usage: true},
		{body: `{"model":"mock-gpt","tools":` + weatherTool + `,"messages":[{"role":"user","content":"Weather?"},{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{}"}}]},{"role":"tool","tool_call_id":"call_1","content":"sunny"}]}`, finish: "stop", content: "Mock reply to: Weather?", usage: true},
		{body: `{"model":"mock-gpt","max_tokens":2,"messages":[{"role":"user","content":"Cut me short please"}]}`, finish: "length", content: "Mock rep", usage: true},
		{body: `{"model":"mock-gpt","max_completion_tokens":3,"messages":[{"role":"user","content":"Cut me short please"}]}`, finish: "length", content: "Mock reply t", usage: true},
		{body: `{"model":"mock-gpt","mock_usage":false,"messages":[{"role":"user","content":"No usage"}]}`, finish: "stop", content: "No usage"},
	} {
		status, hdr, body := post(t, base+"/chat/completions", tc.body)
		if status != http.StatusOK || !strings.HasPrefix(hdr.Get("Content-Type"), "application/json") {
			t.Fatalf("Test %d: status %d, content type %q, body %s", i, status, hdr.Get("Content-Type"), body)
		}
		r := gjson.Parse(body)
		if !strings.HasPrefix(r.Get("id").Str, "chatcmpl-") || r.Get("object").Str != "chat.completion" || r.Get("created").Int() == 0 {
			t.Errorf("Test %d: bad envelope %s", i, body)
		}
		if r.Get("model").Str != gjson.Get(tc.body, "model").Str {
			t.Errorf("Test %d: model %q not echoed", i, r.Get("model").Str)
		}
		msg := r.Get("choices.0.message")
		if msg.Get("role").Str != "assistant" || r.Get("choices.0.finish_reason").Str != tc.finish {
			t.Errorf("Test %d: want finish %q, got %s", i, tc.finish, body)
		}
		if tc.tool != "" {
			call := msg.Get("tool_calls.0")
			if msg.Get("content").Type != gjson.Null || call.Get("type").Str != "function" || call.Get("function.name").Str != tc.tool || !strings.HasPrefix(call.Get("id").Str, "call_") {
				t.Errorf("Test %d: bad tool call %s", i, msg.Raw)
			}
			args := call.Get("function.arguments").Str
			if !json.Valid([]byte(args)) {
				t.Errorf("Test %d: arguments %q are not JSON", i, args)
			}
			if tc.tool == "get_weather" && (gjson.Get(args, "city").Str != "Weather in Paris?" || gjson.Get(args, "days").Int() != 1 || gjson.Get(args, "unit").Str != "celsius") {
				t.Errorf("Test %d: arguments %s do not follow the schema", i, args)
			}
		} else if !strings.Contains(msg.Get("content").Str, tc.content) || msg.Get("tool_calls").Exists() {
			t.Errorf("Test %d: content %q does not contain %q", i, msg.Get("content").Str, tc.content)
		}
		if got := msg.Get("reasoning_content").Str != ""; got != tc.reasoning {
			t.Errorf("Test %d: reasoning_content present %v, want %v", i, got, tc.reasoning)
		}
		u := r.Get("usage")
		if u.Exists() != tc.usage {
			t.Fatalf("Test %d: usage present %v, want %v", i, u.Exists(), tc.usage)
		}
		if !tc.usage {
			continue
		}
		p, c := u.Get("prompt_tokens").Int(), u.Get("completion_tokens").Int()
		if p < 1 || c < 1 || u.Get("total_tokens").Int() != p+c || !u.Get("prompt_tokens_details.cached_tokens").Exists() {
			t.Errorf("Test %d: bad usage %s", i, u.Raw)
		}
		rt := u.Get("completion_tokens_details.reasoning_tokens").Int()
		if (rt > 0) != tc.reasoning || rt >= c && tc.reasoning {
			t.Errorf("Test %d: reasoning tokens %d of %d completion tokens", i, rt, c)
		}
		if max := gjson.Get(tc.body, "max_tokens|max_completion_tokens"); max.Exists() && c > max.Int() {
			t.Errorf("Test %d: %d completion tokens exceed max_tokens %d", i, c, max.Int())
		}
	}
}

func TestChatPromptEstimate(t *testing.T) {
	base := newServer(t, Config{})
	text := strings.Repeat("abcd", 100) // 400 bytes: 100 tokens
	for i, tc := range []struct {
		messages string
		want     int64
	}{
		{`[{"role":"user","content":"` + text + `"}]`, 100},
		{`[{"role":"system","content":"` + text + `"},{"role":"user","content":"` + text + `"}]`, 200},
		{`[{"role":"user","content":[{"type":"text","text":"` + text + `"},{"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA"}}]}]`, 100 + imageTokens},
		{`[{"role":"user","content":"hi"}]`, 1},
	} {
		_, _, body := post(t, base+"/chat/completions", `{"model":"m","messages":`+tc.messages+`}`)
		if got := gjson.Get(body, "usage.prompt_tokens").Int(); got != tc.want {
			t.Errorf("Test %d: prompt_tokens %d, want %d", i, got, tc.want)
		}
	}
}

func TestChatStream(t *testing.T) {
	base := newServer(t, Config{})
	for i, tc := range []struct {
		body         string
		includeUsage bool
		chunks       int // content chunks
		reasoning    bool
	}{
		{body: `{"model":"mock-gpt","stream":true,"messages":[{"role":"user","content":"Stream please"}]}`, chunks: defaultChunks},
		{body: `{"model":"mock-gpt","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"Stream please"}]}`, includeUsage: true, chunks: defaultChunks},
		{body: `{"model":"mock-gpt","stream":true,"mock_chunks":20,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"Stream please"}]}`, includeUsage: true, chunks: 20},
		{body: `{"model":"mock-gpt","stream":true,"mock_chunks":20,"stream_options":{"include_usage":false},"messages":[{"role":"user","content":"Stream please"}]}`, chunks: 20},
		{body: `{"model":"mock-reasoner","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"Stream please"}]}`, includeUsage: true, chunks: defaultChunks, reasoning: true},
	} {
		status, hdr, body := post(t, base+"/chat/completions", tc.body)
		if status != http.StatusOK || !strings.HasPrefix(hdr.Get("Content-Type"), "text/event-stream") {
			t.Fatalf("Test %d: status %d, content type %q", i, status, hdr.Get("Content-Type"))
		}
		events := parseSSE(t, body)
		if last := events[len(events)-1]; last.data != "[DONE]" {
			t.Fatalf("Test %d: last event %q, want [DONE]", i, last.data)
		}
		chunks := events[:len(events)-1]
		var usage gjson.Result
		if tc.includeUsage {
			u := gjson.Parse(chunks[len(chunks)-1].data)
			if !u.Get("choices").IsArray() || len(u.Get("choices").Array()) != 0 || !u.Get("usage.prompt_tokens").Exists() {
				t.Fatalf("Test %d: last chunk before [DONE] is not a usage chunk: %s", i, u.Raw)
			}
			usage = u.Get("usage")
			chunks = chunks[:len(chunks)-1]
		}
		id := gjson.Get(chunks[0].data, "id").Str
		if !strings.HasPrefix(id, "chatcmpl-") {
			t.Fatalf("Test %d: id %q", i, id)
		}
		var content, reasoning strings.Builder
		contentChunks, sawContent := 0, false
		for j, ev := range events[:len(events)-1] {
			c := gjson.Parse(ev.data)
			if c.Get("id").Str != id || c.Get("object").Str != "chat.completion.chunk" || c.Get("model").Str != gjson.Get(tc.body, "model").Str || c.Get("created").Int() == 0 {
				t.Errorf("Test %d: chunk %d has a bad envelope: %s", i, j, ev.data)
			}
			if j == len(chunks) {
				break // the usage chunk
			}
			if hasNull := c.Get("usage").Exists() && c.Get("usage").Type == gjson.Null; hasNull != tc.includeUsage {
				t.Errorf("Test %d: chunk %d: \"usage\":null present %v, want %v", i, j, hasNull, tc.includeUsage)
			}
			delta := c.Get("choices.0.delta")
			finish := c.Get("choices.0.finish_reason")
			switch {
			case j == 0:
				if delta.Get("role").Str != "assistant" || delta.Get("content").Type != gjson.String || delta.Get("content").Str != "" {
					t.Errorf("Test %d: first delta %s", i, delta.Raw)
				}
			case j == len(chunks)-1:
				if delta.Raw != "{}" || finish.Str != "stop" {
					t.Errorf("Test %d: final chunk %s", i, ev.data)
				}
				continue
			}
			if finish.Type != gjson.Null {
				t.Errorf("Test %d: chunk %d has finish_reason %s", i, j, finish.Raw)
			}
			if r := delta.Get("reasoning_content"); r.Exists() {
				if sawContent {
					t.Errorf("Test %d: reasoning after content", i)
				}
				reasoning.WriteString(r.Str)
			}
			if s := delta.Get("content").Str; s != "" {
				sawContent = true
				contentChunks++
				content.WriteString(s)
			}
		}
		if contentChunks != tc.chunks {
			t.Errorf("Test %d: %d content chunks, want %d", i, contentChunks, tc.chunks)
		}
		if !strings.HasPrefix(content.String(), "Mock reply to: Stream please") {
			t.Errorf("Test %d: content %q", i, content.String())
		}
		if (reasoning.Len() > 0) != tc.reasoning {
			t.Errorf("Test %d: reasoning %q", i, reasoning.String())
		}
		// The stream says what the JSON answer to the same request says.
		_, _, js := post(t, base+"/chat/completions", strings.Replace(tc.body, `"stream":true`, `"stream":false`, 1))
		if want := gjson.Get(js, "choices.0.message.content").Str; content.String() != want {
			t.Errorf("Test %d: streamed %q, JSON answer %q", i, content.String(), want)
		}
		if tc.includeUsage && usage.Get("completion_tokens").Int() != gjson.Get(js, "usage.completion_tokens").Int() {
			t.Errorf("Test %d: streamed usage %s, JSON usage %s", i, usage.Raw, gjson.Get(js, "usage").Raw)
		}
	}
}

func TestChatStreamToolCalls(t *testing.T) {
	base := newServer(t, Config{})
	_, _, body := post(t, base+"/chat/completions", `{"model":"mock-gpt","stream":true,"tools":`+weatherTool+`,"messages":[{"role":"user","content":"Weather in Paris?"}]}`)
	events := parseSSE(t, body)
	first := gjson.Get(events[0].data, "choices.0.delta")
	call := first.Get("tool_calls.0")
	if first.Get("role").Str != "assistant" || call.Get("index").Int() != 0 || !strings.HasPrefix(call.Get("id").Str, "call_") ||
		call.Get("type").Str != "function" || call.Get("function.name").Str != "get_weather" {
		t.Fatalf("first delta %s", first.Raw)
	}
	var args strings.Builder
	for _, ev := range events[1 : len(events)-2] {
		d := gjson.Get(ev.data, "choices.0.delta.tool_calls.0")
		if d.Get("index").Int() != 0 || d.Get("id").Exists() {
			t.Errorf("argument delta %s", d.Raw)
		}
		args.WriteString(d.Get("function.arguments").Str)
	}
	if !json.Valid([]byte(args.String())) || gjson.Get(args.String(), "city").Str != "Weather in Paris?" {
		t.Errorf("streamed arguments %q", args.String())
	}
	final := gjson.Parse(events[len(events)-2].data)
	if final.Get("choices.0.finish_reason").Str != "tool_calls" || final.Get("choices.0.delta").Raw != "{}" {
		t.Errorf("final chunk %s", final.Raw)
	}
}

func TestChatStreamLength(t *testing.T) {
	base := newServer(t, Config{})
	_, _, body := post(t, base+"/chat/completions", `{"model":"mock-gpt","stream":true,"max_tokens":2,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"Long answer please"}]}`)
	events := parseSSE(t, body)
	final := gjson.Get(events[len(events)-3].data, "choices.0.finish_reason").Str
	usage := gjson.Get(events[len(events)-2].data, "usage.completion_tokens").Int()
	if final != "length" || usage != 2 {
		t.Errorf("finish_reason %q and %d completion tokens, want length and 2", final, usage)
	}
}

func TestChatCachedTokens(t *testing.T) {
	base := newServer(t, Config{})
	system := strings.Repeat("You are a helpful assistant. ", 40)
	for i, tc := range []struct {
		body   string
		cached bool
	}{
		{`{"model":"mock-gpt","enable_context_caching":true,"messages":[{"role":"system","content":"` + system + `"},{"role":"user","content":"first"}]}`, false},
		{`{"model":"mock-gpt","enable_context_caching":true,"messages":[{"role":"system","content":"` + system + `"},{"role":"user","content":"second"}]}`, true},
		{`{"model":"other-model","enable_context_caching":true,"messages":[{"role":"system","content":"` + system + `"},{"role":"user","content":"second"}]}`, false},
		{`{"model":"mock-gpt","messages":[{"role":"system","content":"` + system + `"},{"role":"user","content":"third"}]}`, false},
		{`{"model":"mock-gpt","enable_context_caching":true,"messages":[{"role":"user","content":"same"}]}`, false},
		{`{"model":"mock-gpt","enable_context_caching":true,"messages":[{"role":"user","content":"same"}]}`, true},
	} {
		_, _, body := post(t, base+"/chat/completions", tc.body)
		u := gjson.Get(body, "usage")
		cached, prompt := u.Get("prompt_tokens_details.cached_tokens").Int(), u.Get("prompt_tokens").Int()
		if (cached > 0) != tc.cached || cached > prompt {
			t.Errorf("Test %d: cached_tokens %d of %d prompt tokens, want cached %v", i, cached, prompt, tc.cached)
		}
	}
}

func TestChatErrors(t *testing.T) {
	base := newServer(t, Config{})
	for i, tc := range []struct {
		body   string
		status int
		param  string
		code   string
	}{
		{`{"model":"mock-gpt","mock_status":429,"messages":[{"role":"user","content":"x"}]}`, http.StatusTooManyRequests, "", "rate_limit_exceeded"},
		{`{"model":"mock-gpt","mock_status":503,"stream":true,"messages":[{"role":"user","content":"x"}]}`, http.StatusServiceUnavailable, "", ""},
		{`{"model":"mock-gpt","messages":[]}`, http.StatusBadRequest, "messages", ""},
		{`{"messages":[{"role":"user","content":"x"}]}`, http.StatusBadRequest, "model", ""},
		{`{"model":"mock-gpt","max_tokens":0,"messages":[{"role":"user","content":"x"}]}`, http.StatusBadRequest, "max_tokens", ""},
		{`{"model":`, http.StatusBadRequest, "", ""},
	} {
		status, hdr, body := post(t, base+"/chat/completions", tc.body)
		e := gjson.Get(body, "error")
		if status != tc.status || !e.Get("message").Exists() || !e.Get("type").Exists() || e.Get("param").Str != tc.param || e.Get("code").Str != tc.code {
			t.Errorf("Test %d: status %d, body %s", i, status, body)
		}
		if status == http.StatusTooManyRequests && hdr.Get("Retry-After") == "" {
			t.Errorf("Test %d: no Retry-After", i)
		}
	}
}

// TestChatStreamClientGone checks that a slow stream ends when its client
// goes away: the server's Close waits for every handler to return.
func TestChatStreamClientGone(t *testing.T) {
	srv := httptest.NewServer(New(Config{}))
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/v1/chat/completions",
		strings.NewReader(`{"model":"m","stream":true,"mock_chunk_delay_ms":60000,"messages":[{"role":"user","content":"x"}]}`))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 5)
	if _, err := resp.Body.Read(buf); err != nil || string(buf) != "data:" {
		t.Fatalf("first event: %q, %v", buf, err)
	}
	cancel()
	resp.Body.Close()
	srv.Close()
}
