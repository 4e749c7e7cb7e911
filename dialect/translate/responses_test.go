package translate

import (
	"reflect"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/caddy-air/caddy-air/dialect"
	"github.com/caddy-air/caddy-air/dialect/anthropic"
	"github.com/caddy-air/caddy-air/dialect/responses"
)

// TestRoundTripResponsesClient: a Responses conversation translated to
// Messages keeps its meaning (roles, text, images, tool call ids and
// arguments, reasoning with its signature), and a Messages answer shown
// as a Response, whose output items the client sends back as the next
// turn's input, comes back to the provider as it answered: blocks, tool
// ids and arguments, thinking signatures, redacted thinking, with its
// stop reason and usage shown.
func TestRoundTripResponsesClient(t *testing.T) {
	rc, an := responses.Codec{}, anthropic.Codec{}
	for i, body := range []string{
		`{"model":"m","instructions":"Be terse.","input":"Hi"}`,
		`{"model":"m","input":[{"role":"user","content":[{"type":"input_text","text":"See"},{"type":"input_image","image_url":"data:image/png;base64,iVBORw0KGgo="}]}]}`,
		`{"model":"m","tools":[{"type":"function","name":"w","parameters":{"type":"object"}}],"input":[{"role":"user","content":"Weather?"},
		  {"type":"reasoning","summary":[{"type":"summary_text","text":"need tool"}],"encrypted_content":"c2lnbmVk"},
		  {"type":"message","role":"assistant","content":[{"type":"output_text","text":"Checking"}]},
		  {"type":"function_call","call_id":"toolu_1","name":"w","arguments":"{\"city\": \"Oslo\"}"},{"type":"function_call","call_id":"toolu_2","name":"w","arguments":"{\"city\":\"Rome\"}"},
		  {"type":"function_call_output","call_id":"toolu_1","output":"rain"},{"type":"function_call_output","call_id":"toolu_2","output":"sun"},{"role":"user","content":"Thanks"}]}`,
	} {
		first, err := rc.DecodeRequest([]byte(body))
		if err != nil {
			t.Fatalf("Test %d: %v", i, err)
		}
		mid := through(t, first, an, an)
		if want, got := meaning(t, first), meaning(t, mid); !reflect.DeepEqual(want, got) {
			t.Errorf("Test %d: Responses → Messages\n got %q\nwant %q", i, got, want)
		}
	}

	for i, body := range []string{
		`{"id":"msg_1","type":"message","role":"assistant","model":"c","content":[{"type":"text","text":"Hello"}],"stop_reason":"end_turn","usage":{"input_tokens":10,"cache_read_input_tokens":30,"cache_creation_input_tokens":5,"output_tokens":7}}`,
		`{"id":"msg_2","type":"message","role":"assistant","model":"c","content":[{"type":"thinking","thinking":"need the tool","signature":"RXFRQkNnSVlBaElN"},{"type":"redacted_thinking","data":"EmwKAhgBEgy3"},{"type":"text","text":"Checking"},{"type":"tool_use","id":"toolu_9","name":"w","input":{"city":"Oslo"}},{"type":"tool_use","id":"toolu_10","name":"w","input":{}}],"stop_reason":"tool_use","usage":{"input_tokens":3,"output_tokens":4}}`,
		`{"id":"msg_3","type":"message","role":"assistant","model":"c","content":[{"type":"text","text":"cut"}],"stop_reason":"max_tokens","usage":{"input_tokens":3,"output_tokens":4}}`,
	} {
		first, err := an.DecodeResponse([]byte(body))
		if err != nil {
			t.Fatal(err)
		}
		b, err := rc.EncodeResponse(nil, first)
		if err != nil {
			t.Fatal(err)
		}
		out := gjson.GetBytes(b, "output")
		next, err := rc.DecodeRequest([]byte(`{"model":"m","input":[{"role":"user","content":"q"},` + strings.TrimPrefix(out.Raw, "[") + "}"))
		if err != nil {
			t.Fatalf("Test %d: %v in %s", i, err, b)
		}
		back := through(t, next, an, an) // as the provider gets it
		wantM := meaning(t, &dialect.Request{Messages: []dialect.Message{{Role: dialect.RoleAssistant, Content: first.Content}}})
		gotM := meaning(t, &dialect.Request{Messages: back.Messages[1:]})
		if !reflect.DeepEqual(wantM, gotM) || len(back.Messages) != 2 {
			t.Errorf("Test %d: Messages → Responses → Messages\n got %q\nwant %q", i, gotM, wantM)
		}
		var redacted []string
		for _, bl := range back.Messages[1].Content {
			if bl.Kind == dialect.BlockRedactedThinking {
				redacted = append(redacted, bl.Data)
			}
		}
		if strings.Contains(body, "redacted_thinking") && !reflect.DeepEqual(redacted, []string{"EmwKAhgBEgy3"}) {
			t.Errorf("Test %d: redacted thinking %q", i, redacted)
		}
		u := gjson.GetBytes(b, "usage")
		if u.Get("input_tokens").Int() != first.Usage.PromptTotal() || u.Get("input_tokens_details.cached_tokens").Int() != first.Usage.CacheRead ||
			u.Get("input_tokens_details.cache_write_tokens").Int() != first.Usage.CacheCreation || u.Get("output_tokens").Int() != first.Usage.Output {
			t.Errorf("Test %d: usage %s for %+v", i, u.Raw, first.Usage)
		}
		status := gjson.GetBytes(b, "status").Str
		if (first.StopReason == dialect.StopMaxTokens) != (status == "incomplete") || (first.StopReason == dialect.StopToolUse) != strings.Contains(out.Raw, `"function_call"`) {
			t.Errorf("Test %d: status %s for %s", i, status, first.StopReason)
		}
	}
}

// responsesResult is a Responses stream accumulated as a client would:
// its items from output_item.done, text and arguments from the deltas.
type responsesResult struct {
	types            []string
	items            []gjson.Result
	text, args, sum  string
	final            gjson.Result
	errCode, errType string
}

func accumulateResponses(t *testing.T, body string) responsesResult {
	t.Helper()
	var r responsesResult
	seq := int64(0)
	for _, d := range dataLines(body) {
		ev := gjson.Parse(d)
		if ev.Get("sequence_number").Int() != seq {
			t.Fatalf("sequence_number %d, want %d in\n%s", ev.Get("sequence_number").Int(), seq, body)
		}
		seq++
		typ := ev.Get("type").Str
		r.types = append(r.types, typ)
		switch typ {
		case "response.output_text.delta":
			r.text += ev.Get("delta").Str
		case "response.function_call_arguments.delta":
			r.args += ev.Get("delta").Str
		case "response.reasoning_summary_text.delta":
			r.sum += ev.Get("delta").Str
		case "response.output_item.done":
			r.items = append(r.items, ev.Get("item"))
		case "response.completed", "response.incomplete", "response.failed":
			r.final = ev.Get("response")
		case "error":
			r.errCode, r.errType = ev.Get("code").Str, ev.Get("error.type").Str
		}
	}
	return r
}

// A Messages stream reaches a Responses client as Responses events, fed
// in pieces cut anywhere: thinking with its signature, text, and a tool
// call whose arguments come over many deltas; the usage in the final
// event; X-Air-Dropped-Params lists store.
func TestWriterMessagesToResponses(t *testing.T) {
	x := mustRequest(t, Responses, Messages, `{"model":"c","stream":true,"store":true,"input":"Weather?","tools":[{"type":"function","name":"w","parameters":{"type":"object"}}]}`, Options{})
	stream := anthropicStream(`{"input_tokens":5,"cache_read_input_tokens":20,"output_tokens":1}`, `{"output_tokens":9}`,
		thinkingBlock(0, "need it", "c2ln"), textBlock(1, "Checking"), toolBlock(2, "toolu_7", "w", `{"ci`, `ty": "O`, `slo"}`))
	for _, n := range []int{0, 7} {
		rec := answer(t, x, 200, sse, stream, n)
		r := accumulateResponses(t, rec.Body.String())
		if rec.Header().Get(DroppedHeader) != "store" || r.text != "Checking" || r.args != `{"city": "Oslo"}` || r.sum != "need it" || len(r.items) != 3 ||
			r.items[0].Get("encrypted_content").Str != "c2ln" || r.items[2].Get("call_id").Str != "toolu_7" || r.items[2].Get("arguments").Str != r.args ||
			r.final.Get("status").Str != "completed" || r.final.Get("usage.input_tokens").Int() != 25 ||
			r.final.Get("usage.input_tokens_details.cached_tokens").Int() != 20 || r.final.Get("usage.output_tokens").Int() != 9 || r.types[len(r.types)-1] != "response.completed" {
			t.Errorf("pieces of %d: %+v from\n%s", n, r, rec.Body)
		}
	}
	// A cut stream ends with response.failed and an error event; nothing
	// follows it.
	cut := stream[:strings.Index(stream, "event: content_block_stop")]
	rec := answer(t, x, 200, sse, cut, 11)
	r := accumulateResponses(t, rec.Body.String())
	if r.errCode != "upstream_cut" || r.final.Get("status").Str != "failed" || r.types[len(r.types)-1] != "error" || r.sum != "need it" {
		t.Errorf("cut: %+v from\n%s", r, rec.Body)
	}
	// A malformed event ends the stream the same way, and nothing the
	// provider sends after it reaches the client.
	bad := cut + "event: content_block_delta\ndata: {\"type\":\n\n" + stream[len(cut):]
	rec = answer(t, x, 200, sse, bad, 9)
	r = accumulateResponses(t, rec.Body.String())
	if r.errCode != "server_error" || r.final.Get("status").Str != "failed" || r.types[len(r.types)-1] != "error" || r.text != "" {
		t.Errorf("malformed: %+v from\n%s", r, rec.Body)
	}
	// An error status is in OpenAI's shape, Retry-After kept.
	x = mustRequest(t, Responses, Messages, `{"model":"c","input":"hi"}`, Options{})
	rec = answer(t, x, 429, "application/json", `{"type":"error","error":{"type":"rate_limit_error","message":"slow"}}`, 0)
	if rec.Code != 429 || gjson.Get(rec.Body.String(), "error.type").Str != "rate_limit_error" || gjson.Get(rec.Body.String(), "error.message").Str != "slow" {
		t.Errorf("429: %d %s", rec.Code, rec.Body)
	}
	// A whole answer is a Response.
	rec = answer(t, x, 200, "application/json", `{"id":"msg_1","type":"message","role":"assistant","model":"c","content":[{"type":"text","text":"Hello"}],"stop_reason":"end_turn","usage":{"input_tokens":10,"output_tokens":7}}`, 0)
	if v := gjson.Parse(rec.Body.String()); rec.Code != 200 || v.Get("object").Str != "response" || v.Get("output.0.content.0.text").Str != "Hello" || v.Get("usage.total_tokens").Int() != 17 {
		t.Errorf("answer: %d %s", rec.Code, rec.Body)
	}
}

// A chat-only provider's stream reaches a Responses client too: tool
// call arguments in order, the usage of the last chunk.
func TestWriterChatToResponses(t *testing.T) {
	x := mustRequest(t, Responses, Chat, `{"model":"q","stream":true,"input":"Weather?","tools":[{"type":"function","name":"w","parameters":{"type":"object"}}]}`, Options{})
	body, err := x.Body("")
	if err != nil || !gjson.GetBytes(body, "stream_options.include_usage").Bool() || gjson.GetBytes(body, "tools.0.function.name").Str != "w" {
		t.Fatalf("chat body %s %v", body, err)
	}
	chunk := func(delta, finish string) string {
		return `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"q","choices":[{"index":0,"delta":` + delta + `,"finish_reason":` + finish + `}]}` + "\n\n"
	}
	stream := chunk(`{"role":"assistant","content":""}`, "null") +
		chunk(`{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"w","arguments":""}}]}`, "null") +
		chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\":"}}]}`, "null") +
		chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"\"Oslo\"}"}}]}`, "null") +
		chunk(`{}`, `"tool_calls"`) +
		`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"q","choices":[],"usage":{"prompt_tokens":12,"completion_tokens":3,"prompt_tokens_details":{"cached_tokens":2}}}` + "\n\ndata: [DONE]\n\n"
	rec := answer(t, x, 200, sse, stream, 13)
	r := accumulateResponses(t, rec.Body.String())
	var fc gjson.Result
	for _, it := range r.items {
		if it.Get("type").Str == "function_call" {
			fc = it
		}
	}
	if fc.Get("call_id").Str != "call_1" || fc.Get("arguments").Str != `{"city":"Oslo"}` || r.args != `{"city":"Oslo"}` ||
		r.final.Get("usage.input_tokens").Int() != 12 || r.final.Get("usage.input_tokens_details.cached_tokens").Int() != 2 || r.final.Get("id").Str != "resp_1" {
		t.Errorf("%+v from\n%s", r, rec.Body)
	}
}

// A built-in tool the provider cannot run is refused, naming it, unless
// the model drops it; then it is listed as dropped.
func TestResponsesBuiltInTools(t *testing.T) {
	body := `{"model":"c","input":"hi","tools":[{"type":"web_search_preview"},{"type":"function","name":"f"}]}`
	_, err := For(Responses, Messages).Request([]byte(body), Options{})
	var ue *UnsupportedError
	if !asUnsupported(err, &ue) || ue.Param != "tools.web_search_preview" {
		t.Fatalf("refusal: %v", err)
	}
	x := mustRequest(t, Responses, Messages, body, Options{DropParams: true})
	b, _ := x.Body("")
	if x.DroppedValue() != "tools.web_search_preview" || gjson.GetBytes(b, "tools.#").Int() != 1 {
		t.Errorf("dropped %q, body %s", x.DroppedValue(), b)
	}
	// The provider codecs' names of what they refuse or drop are the
	// client's.
	_, err = For(Responses, Messages).Request([]byte(`{"model":"c","input":"hi","text":{"format":{"type":"json_object"}}}`), Options{})
	if !asUnsupported(err, &ue) || ue.Param != "text.format" {
		t.Errorf("text.format: %v", err)
	}
	x = mustRequest(t, Responses, Chat, `{"model":"q","input":[{"type":"reasoning","summary":[],"encrypted_content":"s"},{"role":"assistant","content":"a"},{"role":"user","content":"b"}]}`, Options{})
	if x.DroppedValue() != "reasoning" {
		t.Errorf("reasoning to chat: dropped %q", x.DroppedValue())
	}
	if For(Chat, Responses) != nil || For(Messages, Responses) != nil {
		t.Error("Responses is no provider protocol here")
	}
}

func asUnsupported(err error, ue **UnsupportedError) bool {
	u, ok := err.(*UnsupportedError)
	*ue = u
	return ok
}

// A request as Codex CLI sends it reaches a messages model without
// drop_params: nothing in it is refused, only prompt_cache_key is left
// out (and said so); its developer message joins the system prompt.
func TestResponsesCodexRequest(t *testing.T) {
	body := `{"model":"claude-sonnet","instructions":"You are Codex, based on GPT-5.","input":[` +
		`{"type":"message","role":"developer","content":[{"type":"input_text","text":"<permissions instructions>"}]},` +
		`{"type":"message","role":"user","content":[{"type":"input_text","text":"<environment_context>cwd</environment_context>"}]},` +
		`{"type":"message","role":"user","content":[{"type":"input_text","text":"list the files"}]},` +
		`{"type":"reasoning","summary":[{"type":"summary_text","text":"run ls"}],"content":null,"encrypted_content":"c2ln"},` +
		`{"type":"function_call","name":"shell","arguments":"{\"command\":[\"ls\"]}","call_id":"toolu_1"},` +
		`{"type":"function_call_output","call_id":"toolu_1","output":"a.go\nb.go"}],` +
		`"tools":[{"type":"function","name":"shell","description":"Runs a shell command","strict":false,"parameters":{"type":"object","properties":{"command":{"type":"array","items":{"type":"string"}}},"required":["command"],"additionalProperties":false}}],` +
		`"tool_choice":"auto","parallel_tool_calls":false,"reasoning":{"effort":"medium","summary":"auto"},"store":false,"stream":true,` +
		`"include":["reasoning.encrypted_content"],"prompt_cache_key":"0199a7c2-5a8e-7d52-b1c4-3b6e5f0c1d2e"}`
	x := mustRequest(t, Responses, Messages, body, Options{})
	b, err := x.Body("")
	if err != nil {
		t.Fatal(err)
	}
	v := gjson.ParseBytes(b)
	if x.DroppedValue() != "prompt_cache_key" || v.Get("system.#").Int() != 2 || v.Get("messages.#").Int() != 3 ||
		v.Get("messages.1.content.0.type").Str != "thinking" || v.Get("messages.1.content.0.signature").Str != "c2ln" ||
		v.Get("messages.1.content.1.id").Str != "toolu_1" || v.Get("messages.2.content.0.tool_use_id").Str != "toolu_1" ||
		!v.Get("tool_choice.disable_parallel_tool_use").Bool() || v.Get("thinking.budget_tokens").Int() < 1024 || v.Get("thinking.budget_tokens").Int() >= v.Get("max_tokens").Int() || !v.Get("stream").Bool() {
		t.Errorf("dropped %q, body %s", x.DroppedValue(), b)
	}
}
