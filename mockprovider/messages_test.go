package mockprovider

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

const anthropicVersion = "2023-06-01"

// postMessages posts a Messages request with x-api-key and anthropic-version.
func postMessages(t *testing.T, base, body string) (int, string) {
	t.Helper()
	status, _, out := do(t, http.MethodPost, base+"/messages", "application/json", body,
		"Authorization", "", "X-Api-Key", testKey, "Anthropic-Version", anthropicVersion)
	return status, out
}

func TestMessagesJSON(t *testing.T) {
	base := newServer(t, Config{})
	for i, tc := range []struct {
		body   string
		stop   string
		types  []string // content block types
		text   string   // substring of the text block
		output int64    // upper bound on output tokens, when not 0
	}{
		{body: `{"model":"mock-claude","max_tokens":256,"messages":[{"role":"user","content":"Hello Claude"}]}`, stop: "end_turn", types: []string{"text"}, text: "Mock reply to: Hello Claude"},
		{body: `{"model":"mock-claude","max_tokens":256,"system":"Be kind.","messages":[{"role":"user","content":[{"type":"text","text":"Blocks too"}]}]}`, stop: "end_turn", types: []string{"text"}, text: "Blocks too"},
		{body: `{"model":"mock-claude","max_tokens":3,"messages":[{"role":"user","content":"A long answer please"}]}`, stop: "max_tokens", types: []string{"text"}, text: "Mock reply t", output: 3},
		{body: `{"model":"mock-claude","max_tokens":1024,"thinking":{"type":"enabled","budget_tokens":512},"messages":[{"role":"user","content":"Think"}]}`, stop: "end_turn", types: []string{"thinking", "text"}, text: "Think"},
		{body: `{"model":"mock-claude","max_tokens":256,"tools":[{"name":"get_weather","input_schema":{"type":"object","properties":{"city":{"type":"string"}}}}],"messages":[{"role":"user","content":"Weather in Paris?"}]}`, stop: "tool_use", types: []string{"tool_use"}},
		{body: `{"model":"mock-claude","max_tokens":256,"tools":[{"name":"get_weather","input_schema":{"type":"object"}}],"tool_choice":{"type":"none"},"messages":[{"role":"user","content":"No tools"}]}`, stop: "end_turn", types: []string{"text"}, text: "No tools"},
		{body: `{"model":"mock-claude","max_tokens":256,"tools":[{"name":"get_weather","input_schema":{"type":"object"}}],"messages":[{"role":"user","content":"Weather?"},{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"sunny"}]}]}`, stop: "end_turn", types: []string{"text"}},
	} {
		status, body := postMessages(t, base, tc.body)
		if status != http.StatusOK {
			t.Fatalf("Test %d: status %d, body %s", i, status, body)
		}
		m := gjson.Parse(body)
		if !strings.HasPrefix(m.Get("id").Str, "msg_") || m.Get("type").Str != "message" || m.Get("role").Str != "assistant" ||
			m.Get("model").Str != "mock-claude" || m.Get("stop_reason").Str != tc.stop || m.Get("stop_sequence").Type != gjson.Null {
			t.Errorf("Test %d: bad message %s", i, body)
		}
		blocks := m.Get("content").Array()
		if len(blocks) != len(tc.types) {
			t.Fatalf("Test %d: content %s, want types %v", i, m.Get("content").Raw, tc.types)
		}
		for j, b := range blocks {
			if b.Get("type").Str != tc.types[j] {
				t.Errorf("Test %d: block %d type %q, want %q", i, j, b.Get("type").Str, tc.types[j])
			}
			switch tc.types[j] {
			case "text":
				if !strings.Contains(b.Get("text").Str, tc.text) {
					t.Errorf("Test %d: text %q does not contain %q", i, b.Get("text").Str, tc.text)
				}
			case "thinking":
				if b.Get("thinking").Str == "" || b.Get("signature").Str == "" {
					t.Errorf("Test %d: thinking block %s", i, b.Raw)
				}
			case "tool_use":
				if !strings.HasPrefix(b.Get("id").Str, "toolu_") || b.Get("name").Str != "get_weather" || b.Get("input.city").Str != "Weather in Paris?" {
					t.Errorf("Test %d: tool_use block %s", i, b.Raw)
				}
			}
		}
		u := m.Get("usage")
		for _, f := range []string{"input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "cache_creation.ephemeral_5m_input_tokens", "cache_creation.ephemeral_1h_input_tokens"} {
			if u.Get(f).Type != gjson.Number {
				t.Errorf("Test %d: usage.%s missing in %s", i, f, u.Raw)
			}
		}
		out := u.Get("output_tokens").Int()
		if u.Get("input_tokens").Int() < 1 || out < 1 || (tc.output > 0 && out > tc.output) {
			t.Errorf("Test %d: usage %s", i, u.Raw)
		}
	}
}

func TestMessagesStream(t *testing.T) {
	base := newServer(t, Config{})
	for i, tc := range []struct {
		body   string
		events []string // event names, with "delta*" for one or more content_block_delta
		deltas []string // delta types in order, runs collapsed
		stop   string
	}{
		{
			body:   `{"model":"mock-claude","max_tokens":256,"stream":true,"messages":[{"role":"user","content":"Stream to me"}]}`,
			events: []string{"message_start", "content_block_start", "ping", "delta*", "content_block_stop", "message_delta", "message_stop"},
			deltas: []string{"text_delta"},
			stop:   "end_turn",
		},
		{
			body: `{"model":"mock-claude","max_tokens":1024,"stream":true,"thinking":{"type":"enabled","budget_tokens":512},"messages":[{"role":"user","content":"Think and stream"}]}`,
			events: []string{"message_start", "content_block_start", "ping", "delta*", "content_block_stop",
				"content_block_start", "delta*", "content_block_stop", "message_delta", "message_stop"},
			deltas: []string{"thinking_delta", "signature_delta", "text_delta"},
			stop:   "end_turn",
		},
		{
			body:   `{"model":"mock-claude","max_tokens":256,"stream":true,"tools":[{"name":"get_weather","input_schema":{"type":"object","properties":{"city":{"type":"string"}}}}],"messages":[{"role":"user","content":"Weather in Paris?"}]}`,
			events: []string{"message_start", "content_block_start", "ping", "delta*", "content_block_stop", "message_delta", "message_stop"},
			deltas: []string{"input_json_delta"},
			stop:   "tool_use",
		},
		{
			body:   `{"model":"mock-claude","max_tokens":2,"stream":true,"messages":[{"role":"user","content":"Cut"}]}`,
			events: []string{"message_start", "content_block_start", "ping", "delta*", "content_block_stop", "message_delta", "message_stop"},
			deltas: []string{"text_delta"},
			stop:   "max_tokens",
		},
	} {
		status, body := postMessages(t, base, tc.body)
		if status != http.StatusOK {
			t.Fatalf("Test %d: status %d, body %s", i, status, body)
		}
		events := parseSSE(t, body)
		var names, deltas []string
		var text, thinking, partial strings.Builder
		blocks := map[int64]string{}
		for _, ev := range events {
			d := gjson.Parse(ev.data)
			if d.Get("type").Str != ev.name {
				t.Errorf("Test %d: event %q carries type %q", i, ev.name, d.Get("type").Str)
			}
			name := ev.name
			if name == "content_block_delta" {
				name = "delta*"
				if dt := d.Get("delta.type").Str; len(deltas) == 0 || deltas[len(deltas)-1] != dt {
					deltas = append(deltas, dt)
				}
				text.WriteString(d.Get("delta.text").Str)
				thinking.WriteString(d.Get("delta.thinking").Str)
				partial.WriteString(d.Get("delta.partial_json").Str)
			}
			if len(names) == 0 || names[len(names)-1] != name || name != "delta*" {
				names = append(names, name)
			}
			if ev.name == "content_block_start" {
				blocks[d.Get("index").Int()] = d.Get("content_block.type").Str
			}
		}
		if strings.Join(names, " ") != strings.Join(tc.events, " ") {
			t.Errorf("Test %d: events\n%v, want\n%v", i, names, tc.events)
		}
		if strings.Join(deltas, " ") != strings.Join(tc.deltas, " ") {
			t.Errorf("Test %d: delta types %v, want %v", i, deltas, tc.deltas)
		}
		start := gjson.Get(events[0].data, "message")
		if !strings.HasPrefix(start.Get("id").Str, "msg_") || start.Get("content").Raw != "[]" || start.Get("stop_reason").Type != gjson.Null ||
			!start.Get("usage.cache_creation_input_tokens").Exists() || !start.Get("usage.cache_read_input_tokens").Exists() || start.Get("usage.input_tokens").Int() < 1 {
			t.Errorf("Test %d: message_start %s", i, events[0].data)
		}
		md := gjson.Parse(events[len(events)-2].data)
		if md.Get("delta.stop_reason").Str != tc.stop {
			t.Errorf("Test %d: stop_reason %q, want %q", i, md.Get("delta.stop_reason").Str, tc.stop)
		}
		// The stream says what the JSON answer to the same request says.
		_, js := postMessages(t, base, strings.Replace(tc.body, `"stream":true`, `"stream":false`, 1))
		if want := gjson.Get(js, "usage.output_tokens").Int(); md.Get("usage.output_tokens").Int() != want {
			t.Errorf("Test %d: message_delta output_tokens %d, JSON answer %d", i, md.Get("usage.output_tokens").Int(), want)
		}
		for _, b := range gjson.Get(js, "content").Array() {
			switch b.Get("type").Str {
			case "text":
				if text.String() != b.Get("text").Str || blocks[int64(len(blocks)-1)] != "text" {
					t.Errorf("Test %d: streamed text %q, JSON %q", i, text.String(), b.Get("text").Str)
				}
			case "thinking":
				if thinking.String() != b.Get("thinking").Str || blocks[0] != "thinking" {
					t.Errorf("Test %d: streamed thinking %q, JSON %q", i, thinking.String(), b.Get("thinking").Str)
				}
			case "tool_use":
				if !json.Valid([]byte(partial.String())) || gjson.Get(partial.String(), "city").Str != b.Get("input.city").Str {
					t.Errorf("Test %d: streamed input %q, JSON %s", i, partial.String(), b.Get("input").Raw)
				}
			}
		}
	}
}

func TestMessagesPromptCaching(t *testing.T) {
	base := newServer(t, Config{})
	system := strings.Repeat("You are a careful assistant. ", 40) // 1160 bytes: 290 tokens
	req := func(cc, user string, stream bool) string {
		return `{"model":"mock-claude","max_tokens":64,"stream":` + map[bool]string{true: "true", false: "false"}[stream] +
			`,"system":[{"type":"text","text":"` + system + `","cache_control":` + cc + `}],"messages":[{"role":"user","content":"` + user + `"}]}`
	}
	usageOf := func(stream bool, body string) gjson.Result {
		if stream {
			return gjson.Get(parseSSE(t, body)[0].data, "message.usage")
		}
		return gjson.Get(body, "usage")
	}
	short, long := `{"type":"ephemeral"}`, `{"type":"ephemeral","ttl":"1h"}`
	for i, tc := range []struct {
		body           string
		stream         bool
		creation, read int64
		creation1h     bool
	}{
		{body: req(short, "Hello Claude", false), creation: 290},
		{body: req(short, "Hello again", false), read: 290},
		{body: req(short, "And again", true), stream: true, read: 290},
		{body: strings.Replace(req(long, "Other prefix", false), "careful", "careless", 1), creation: 290, creation1h: true},
		{body: `{"model":"mock-claude","max_tokens":64,"system":"` + system + `","messages":[{"role":"user","content":"No cache_control"}]}`},
	} {
		status, body := postMessages(t, base, tc.body)
		if status != http.StatusOK {
			t.Fatalf("Test %d: status %d, body %s", i, status, body)
		}
		u := usageOf(tc.stream, body)
		creation, read := u.Get("cache_creation_input_tokens").Int(), u.Get("cache_read_input_tokens").Int()
		if creation != tc.creation || read != tc.read {
			t.Errorf("Test %d: cache creation %d and read %d, want %d and %d", i, creation, read, tc.creation, tc.read)
		}
		short, long := u.Get("cache_creation.ephemeral_5m_input_tokens").Int(), u.Get("cache_creation.ephemeral_1h_input_tokens").Int()
		if (tc.creation1h && (long != creation || short != 0)) || (!tc.creation1h && (short != creation || long != 0)) {
			t.Errorf("Test %d: cache_creation breakdown %s", i, u.Get("cache_creation").Raw)
		}
		// input_tokens excludes the cached prefix: only the user message.
		user := int64(len(gjson.Get(tc.body, "messages.0.content").Str) / 4)
		if in := u.Get("input_tokens").Int(); tc.creation+tc.read > 0 && in != user {
			t.Errorf("Test %d: input_tokens %d, want %d", i, in, user)
		}
	}
}

func TestMessagesErrors(t *testing.T) {
	base := newServer(t, Config{})
	for i, tc := range []struct {
		header []string
		body   string
		status int
		typ    string
	}{
		{[]string{"X-Api-Key", testKey}, `{"model":"mock-claude","max_tokens":16,"messages":[{"role":"user","content":"x"}]}`, http.StatusBadRequest, "invalid_request_error"},
		{[]string{"X-Api-Key", "wrong", "Anthropic-Version", anthropicVersion}, `{"model":"mock-claude","max_tokens":16,"messages":[{"role":"user","content":"x"}]}`, http.StatusUnauthorized, "authentication_error"},
		{[]string{"X-Api-Key", testKey, "Anthropic-Version", anthropicVersion}, `{"model":"mock-claude","messages":[{"role":"user","content":"x"}]}`, http.StatusBadRequest, "invalid_request_error"},
		{[]string{"X-Api-Key", testKey, "Anthropic-Version", anthropicVersion}, `{"model":"mock-claude","max_tokens":16,"mock_status":529,"messages":[{"role":"user","content":"x"}]}`, 529, "overloaded_error"},
		{[]string{"X-Api-Key", testKey, "Anthropic-Version", anthropicVersion}, `{"model":"mock-claude","max_tokens":16,"mock_status":429,"stream":true,"messages":[{"role":"user","content":"x"}]}`, http.StatusTooManyRequests, "rate_limit_error"},
		{[]string{"X-Api-Key", testKey, "Anthropic-Version", anthropicVersion}, `not json`, http.StatusBadRequest, "invalid_request_error"},
	} {
		status, _, body := do(t, http.MethodPost, base+"/messages", "application/json", tc.body, append([]string{"Authorization", ""}, tc.header...)...)
		e := gjson.Parse(body)
		if status != tc.status || e.Get("type").Str != "error" || e.Get("error.type").Str != tc.typ || e.Get("error.message").Str == "" {
			t.Errorf("Test %d: status %d, body %s; want %d %s", i, status, body, tc.status, tc.typ)
		}
	}
}

func TestCountTokens(t *testing.T) {
	base := newServer(t, Config{})
	status, _, body := do(t, http.MethodPost, base+"/messages/count_tokens", "application/json",
		`{"model":"mock-claude","system":"`+strings.Repeat("abcd", 10)+`","messages":[{"role":"user","content":"`+strings.Repeat("abcd", 20)+`"}]}`,
		"Anthropic-Version", anthropicVersion)
	if status != http.StatusOK || gjson.Get(body, "input_tokens").Int() != 30 {
		t.Errorf("status %d, body %s; want 30 input tokens", status, body)
	}
}

// TestMessagesThinkingSignatureChecked: a thinking block goes back with
// the signature it was given, or the mock refuses it as Anthropic does.
func TestMessagesThinkingSignatureChecked(t *testing.T) {
	h := New(Config{})
	for i, tc := range []struct {
		sig    string
		status int
	}{{mockSignature("hmm"), 200}, {"forged", 400}, {"", 400}} {
		body := `{"model":"m","max_tokens":50,"messages":[{"role":"user","content":"q"},{"role":"assistant","content":[{"type":"thinking","thinking":"hmm","signature":"` + tc.sig + `"},{"type":"text","text":"a"}]},{"role":"user","content":"again"}]}`
		req := httptest.NewRequest(http.MethodPost, "/v1/messages", strings.NewReader(body))
		req.Header.Set("Anthropic-Version", "2023-06-01")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != tc.status {
			t.Errorf("Test %d: status %d: %s", i, rec.Code, rec.Body)
		}
	}
}

// TestMessagesThinkingToolTurn: with thinking on, a tool loop's last
// assistant message must start with its thinking block, as Anthropic
// requires, so that a client that loses it is refused.
func TestMessagesThinkingToolTurn(t *testing.T) {
	h := New(Config{})
	for i, tc := range []struct {
		first    string
		thinking bool
		status   int
	}{
		{`{"type":"thinking","thinking":"hmm","signature":"` + mockSignature("hmm") + `"},`, true, 200},
		{`{"type":"redacted_thinking","data":"x"},`, true, 200},
		{``, true, 400},
		{``, false, 200},
	} {
		thinking := ""
		if tc.thinking {
			thinking = `"thinking":{"type":"enabled","budget_tokens":1024},`
		}
		body := `{"model":"m","max_tokens":2048,` + thinking + `"tools":[{"name":"w","input_schema":{"type":"object"}}],"messages":[{"role":"user","content":"q"},` +
			`{"role":"assistant","content":[` + tc.first + `{"type":"tool_use","id":"toolu_1","name":"w","input":{}}]},` +
			`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"sunny"}]}]}`
		req := httptest.NewRequest(http.MethodPost, "/v1/messages", strings.NewReader(body))
		req.Header.Set("Anthropic-Version", "2023-06-01")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != tc.status || (tc.status == 400 && !strings.Contains(rec.Body.String(), "must start with a thinking block")) {
			t.Errorf("Test %d: status %d: %s", i, rec.Code, rec.Body)
		}
	}
}
