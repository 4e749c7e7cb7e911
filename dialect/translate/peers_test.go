package translate

import (
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// The translation bugs seen in peers (ARCHITECTURE §9) that apply to Chat
// Completions and Messages, one test each.

// Anthropic's input_tokens exclude the cache; a Chat Completions client
// must see them in prompt_tokens (a peer reported 20 where 43,020 were
// billed).
func TestPeerBugCacheTokensInPromptTokens(t *testing.T) {
	x := mustRequest(t, Chat, Messages, `{"model":"c","messages":[{"role":"user","content":"hi"}]}`, Options{})
	rec := answer(t, x, 200, "application/json", `{"id":"msg_1","type":"message","role":"assistant","model":"c","content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn","usage":{"input_tokens":20,"cache_read_input_tokens":43000,"cache_creation_input_tokens":0,"output_tokens":5}}`, 0)
	u := gjson.Get(rec.Body.String(), "usage")
	if u.Get("prompt_tokens").Int() != 43020 || u.Get("prompt_tokens_details.cached_tokens").Int() != 43000 || u.Get("total_tokens").Int() != 43025 {
		t.Fatalf("usage %s", u.Raw)
	}
	// And in a stream's usage chunk.
	x = mustRequest(t, Chat, Messages, `{"model":"c","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`, Options{})
	rec = answer(t, x, 200, sse, anthropicStream(`{"input_tokens":20,"cache_read_input_tokens":43000,"cache_creation_input_tokens":100,"output_tokens":1}`,
		`{"output_tokens":7}`, textBlock(0, "ok")), 7)
	usage := lastUsage(t, rec.Body.String())
	if usage.Get("prompt_tokens").Int() != 43120 || usage.Get("prompt_tokens_details.cached_tokens").Int() != 43000 ||
		usage.Get("prompt_tokens_details.cache_write_tokens").Int() != 100 || usage.Get("completion_tokens").Int() != 7 {
		t.Fatalf("stream usage %s in\n%s", usage.Raw, rec.Body)
	}
}

// And the other way: OpenAI's prompt_tokens include the cached tokens; a
// Messages client must see input_tokens without them.
func TestPeerBugCachedTokensOutOfInputTokens(t *testing.T) {
	x := mustRequest(t, Messages, Chat, `{"model":"g","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`, Options{})
	rec := answer(t, x, 200, "application/json", `{"id":"c1","object":"chat.completion","model":"g","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1000,"completion_tokens":5,"prompt_tokens_details":{"cached_tokens":800}}}`, 0)
	u := gjson.Get(rec.Body.String(), "usage")
	if u.Get("input_tokens").Int() != 200 || u.Get("cache_read_input_tokens").Int() != 800 || u.Get("output_tokens").Int() != 5 {
		t.Fatalf("usage %s", u.Raw)
	}
}

// Messages requires max_tokens: a Chat Completions request without one
// gets the model's ceiling, or the default.
func TestPeerBugDefaultMaxTokensForAnthropic(t *testing.T) {
	body := `{"model":"c","messages":[{"role":"user","content":"hi"}]}`
	for i, tc := range []struct {
		o    Options
		want int64
	}{{Options{}, 4096}, {Options{MaxTokens: 64000}, 64000}} {
		x := mustRequest(t, Chat, Messages, body, tc.o)
		b, err := x.Body("claude-x")
		if err != nil {
			t.Fatal(err)
		}
		if got := gjson.GetBytes(b, "max_tokens").Int(); got != tc.want || gjson.GetBytes(b, "model").Str != "claude-x" {
			t.Errorf("Test %d: body %s", i, b)
		}
	}
	x := mustRequest(t, Chat, Messages, `{"model":"c","max_completion_tokens":77,"messages":[{"role":"user","content":"hi"}]}`, Options{MaxTokens: 64000})
	if b, _ := x.Body(""); gjson.GetBytes(b, "max_tokens").Int() != 77 {
		t.Errorf("the client's max_completion_tokens was not kept: %s", b)
	}
}

// Tool call ids are kept as the provider and the client wrote them, never
// regenerated, so that results still match their calls.
func TestPeerBugToolIDsKept(t *testing.T) {
	x := mustRequest(t, Messages, Chat, `{"model":"g","max_tokens":10,"messages":[
		{"role":"user","content":"weather?"},
		{"role":"assistant","content":[{"type":"tool_use","id":"toolu_A1","name":"w","input":{"city":"Oslo"}},{"type":"tool_use","id":"toolu_B2","name":"w","input":{"city":"Rome"}}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_B2","content":"sun"},{"type":"tool_result","tool_use_id":"toolu_A1","content":[{"type":"text","text":"rain"}]}]}]}`, Options{})
	b, _ := x.Body("")
	msgs := gjson.GetBytes(b, "messages")
	if msgs.Get("1.tool_calls.0.id").Str != "toolu_A1" || msgs.Get("1.tool_calls.1.id").Str != "toolu_B2" ||
		msgs.Get("2.tool_call_id").Str != "toolu_B2" || msgs.Get("2.content").Str != "sun" ||
		msgs.Get("3.tool_call_id").Str != "toolu_A1" || msgs.Get("3.content").Str != "rain" ||
		msgs.Get("1.tool_calls.0.function.arguments").Str != `{"city":"Oslo"}` {
		t.Fatalf("messages %s", msgs.Raw)
	}
	rec := answer(t, x, 200, "application/json", `{"id":"c1","object":"chat.completion","model":"g","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_xyz","type":"function","function":{"name":"w","arguments":"{\"city\":\"Paris\"}"}}]},"finish_reason":"tool_calls"}]}`, 0)
	if c := gjson.Get(rec.Body.String(), "content.0"); c.Get("id").Str != "call_xyz" || c.Get("input.city").Str != "Paris" ||
		gjson.Get(rec.Body.String(), "stop_reason").Str != "tool_use" {
		t.Fatalf("answer %s", rec.Body)
	}
}

// Parallel tool calls streamed with interleaved argument deltas stay
// apart, each call's fragments in order.
func TestPeerBugParallelToolArgumentsNotMerged(t *testing.T) {
	x := mustRequest(t, Messages, Chat, `{"model":"g","max_tokens":10,"stream":true,"messages":[{"role":"user","content":"two calls"}]}`, Options{})
	chunk := func(delta string) string {
		return `data: {"id":"c1","object":"chat.completion.chunk","model":"g","choices":[{"index":0,"delta":` + delta + `,"finish_reason":null}]}` + "\n\n"
	}
	stream := chunk(`{"role":"assistant","tool_calls":[{"index":0,"id":"call_A","type":"function","function":{"name":"w","arguments":""}}]}`) +
		chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"{\"ci"}}]}`) +
		chunk(`{"tool_calls":[{"index":1,"id":"call_B","type":"function","function":{"name":"w","arguments":"{\"city\":"}}]}`) +
		chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"ty\":\"Oslo\"}"}}]}`) +
		chunk(`{"tool_calls":[{"index":1,"function":{"arguments":"\"Rome\"}"}}]}`) +
		`data: {"id":"c1","object":"chat.completion.chunk","model":"g","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}` + "\n\n" +
		`data: {"id":"c1","object":"chat.completion.chunk","model":"g","choices":[],"usage":{"prompt_tokens":9,"completion_tokens":4}}` + "\n\n" +
		"data: [DONE]\n\n"
	for _, n := range []int{0, 1, 13} {
		rec := answer(t, x, 200, sse, stream, n)
		m := accumulateMessages(t, rec.Body.String())
		if len(m.blocks) != 2 || m.blocks[0].id != "call_A" || m.blocks[1].id != "call_B" ||
			m.blocks[0].json.String() != `{"city":"Oslo"}` || m.blocks[1].json.String() != `{"city":"Rome"}` ||
			m.stop != "tool_use" || m.output != 4 || m.input != 9 || !m.stopped {
			t.Fatalf("pieces of %d: %+v from\n%s", n, m, rec.Body)
		}
	}
}

// A thinking block's signature reaches a Chat Completions client, and
// comes back to Anthropic with the block on the next turn.
func TestPeerBugThinkingSignatureKept(t *testing.T) {
	x := mustRequest(t, Chat, Messages, `{"model":"c","stream":true,"messages":[{"role":"user","content":"think"}],"reasoning_effort":"low"}`, Options{})
	if b, _ := x.Body(""); gjson.GetBytes(b, "thinking.budget_tokens").Int() != 1024 {
		t.Fatalf("thinking config %s", b)
	}
	rec := answer(t, x, 200, sse, anthropicStream(`{"input_tokens":5,"output_tokens":1}`, `{"output_tokens":9}`,
		thinkingBlock(0, "Let me see", "EqQBsig=="), textBlock(1, "42")), 5)
	var sig, reasoning, content string
	for _, data := range dataLines(rec.Body.String()) {
		d := gjson.Get(data, "choices.0.delta")
		reasoning += d.Get("reasoning_content").Str
		content += d.Get("content").Str
		if tb := d.Get("thinking_blocks.0"); tb.Exists() {
			sig = tb.Get("signature").Str
			if tb.Get("thinking").Str != "Let me see" {
				t.Errorf("thinking block %s", tb.Raw)
			}
		}
	}
	if sig != "EqQBsig==" || reasoning != "Let me see" || content != "42" {
		t.Fatalf("signature %q, reasoning %q, content %q from\n%s", sig, reasoning, content, rec.Body)
	}
	// The second turn sends the block back as the client kept it.
	x = mustRequest(t, Chat, Messages, `{"model":"c","messages":[{"role":"user","content":"think"},
		{"role":"assistant","content":"42","reasoning_content":"Let me see","thinking_blocks":[{"type":"thinking","thinking":"Let me see","signature":"EqQBsig=="},{"type":"redacted_thinking","data":"ENC"}]},
		{"role":"user","content":"why?"}]}`, Options{})
	b, _ := x.Body("")
	a := gjson.GetBytes(b, "messages.1.content")
	if a.Get("0.type").Str != "thinking" || a.Get("0.signature").Str != "EqQBsig==" || a.Get("1.type").Str != "redacted_thinking" ||
		a.Get("1.data").Str != "ENC" || a.Get("2.text").Str != "42" {
		t.Fatalf("assistant turn %s", a.Raw)
	}
	if strings.Contains(x.DroppedValue(), "reasoning") {
		t.Errorf("signed reasoning reported dropped: %q", x.DroppedValue())
	}
}
