package billing

import "testing"

// TestNormalizeCharges reads the charges beyond plain tokens from each
// protocol's usage object: audio tokens (chat, Responses), Anthropic's
// server tool calls, and the image tokens of an Images answer.
func TestNormalizeCharges(t *testing.T) {
	for i, tc := range []struct {
		name string
		norm func([]byte) (Usage, error)
		in   string
		want Usage
	}{
		{"chat audio in and out", NormalizeOpenAI,
			`{"prompt_tokens":1200,"completion_tokens":900,"prompt_tokens_details":{"cached_tokens":200,"audio_tokens":700},
			"completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":850}}`,
			Usage{Input: 1000, CacheRead: 200, AudioInput: 700, Output: 900, AudioOutput: 850}},
		{"chat audio above the uncached prompt is capped", NormalizeOpenAI,
			`{"prompt_tokens":100,"completion_tokens":5,"prompt_tokens_details":{"cached_tokens":60,"audio_tokens":90},
			"completion_tokens_details":{"audio_tokens":9}}`,
			Usage{Input: 40, CacheRead: 60, AudioInput: 40, Output: 5, AudioOutput: 5}},
		{"chat audio negative and null", NormalizeOpenAI,
			`{"prompt_tokens":10,"completion_tokens":5,"prompt_tokens_details":{"audio_tokens":-3},"completion_tokens_details":{"audio_tokens":null}}`,
			Usage{Input: 10, Output: 5}},
		{"anthropic web search and fetch", NormalizeAnthropic,
			`{"input_tokens":105,"output_tokens":512,"server_tool_use":{"web_search_requests":3,"web_fetch_requests":2}}`,
			Usage{Input: 105, Output: 512, WebSearches: 3, WebFetches: 2}},
		{"anthropic code execution calls are one session", NormalizeAnthropic,
			`{"input_tokens":10,"output_tokens":20,"server_tool_use":{"web_search_requests":0,"code_execution_requests":4}}`,
			Usage{Input: 10, Output: 20, CodeSessions: 1}},
		{"anthropic server_tool_use null", NormalizeAnthropic,
			`{"input_tokens":1,"output_tokens":2,"server_tool_use":null}`, Usage{Input: 1, Output: 2}},
		{"anthropic negative searches", NormalizeAnthropic,
			`{"input_tokens":1,"output_tokens":2,"server_tool_use":{"web_search_requests":-5}}`, Usage{Input: 1, Output: 2}},
		{"responses audio", NormalizeResponses,
			`{"input_tokens":500,"input_tokens_details":{"cached_tokens":100,"audio_tokens":300},"output_tokens":80,
			"output_tokens_details":{"reasoning_tokens":0,"audio_tokens":60}}`,
			Usage{Input: 400, CacheRead: 100, AudioInput: 300, Output: 80, AudioOutput: 60}},
		{"images generation: all output is image tokens", NormalizeImages,
			`{"total_tokens":4210,"input_tokens":50,"output_tokens":4160,"input_tokens_details":{"text_tokens":50,"image_tokens":0}}`,
			Usage{Input: 50, Output: 4160, ImageOutput: 4160}},
		{"images edit: image input tokens", NormalizeImages,
			`{"input_tokens":373,"output_tokens":1056,"input_tokens_details":{"text_tokens":50,"image_tokens":323}}`,
			Usage{Input: 373, ImageInput: 323, Output: 1056, ImageOutput: 1056}},
		{"images output breakdown", NormalizeImages,
			`{"input_tokens":20,"output_tokens":300,"output_tokens_details":{"image_tokens":272,"text_tokens":28}}`,
			Usage{Input: 20, Output: 300, ImageOutput: 272}},
		{"images image tokens above the whole are capped", NormalizeImages,
			`{"input_tokens":20,"output_tokens":300,"input_tokens_details":{"image_tokens":99},"output_tokens_details":{"image_tokens":999}}`,
			Usage{Input: 20, ImageInput: 20, Output: 300, ImageOutput: 300}},
	} {
		got, err := tc.norm([]byte(tc.in))
		if err != nil || got != tc.want {
			t.Errorf("Test %d (%s): got %+v, %v; want %+v", i, tc.name, got, err, tc.want)
		}
	}
}

// TestToolCalls counts a Responses answer's priced tool calls from its
// output items, each once however often a stream shows it.
func TestToolCalls(t *testing.T) {
	const output = `[
		{"type":"web_search_call","id":"ws_1","status":"completed","action":{"type":"search","query":"a"}},
		{"type":"web_search_call","id":"ws_2","status":"completed"},
		{"type":"file_search_call","id":"fs_1","queries":["q"],"status":"completed"},
		{"type":"code_interpreter_call","id":"ci_1","container_id":"cntr_A","code":"1+1"},
		{"type":"code_interpreter_call","id":"ci_2","container_id":"cntr_A","code":"2+2"},
		{"type":"code_interpreter_call","id":"ci_3","container_id":"cntr_B","code":"3"},
		{"type":"image_generation_call","id":"ig_1","result":"aGk="},
		{"type":"function_call","id":"fc_1","name":"f","arguments":"{}"},
		{"type":"message","id":"msg_1","content":[{"type":"output_text","text":"\"type\":\"web_search_call\""}]}
	]`
	want := Usage{Input: 7, WebSearches: 2, FileSearches: 1, CodeSessions: 2, ImageCalls: 1}

	var c ToolCalls
	c.Output([]byte(output))
	if got := c.Apply(Usage{Input: 7}); got != want {
		t.Errorf("body: %+v, want %+v", got, want)
	}

	// A stream: the items' done events, a completed event, then the final
	// output repeating them all.
	var s ToolCalls
	s.Item(0, []byte(`{"type":"web_search_call","id":"ws_1","status":"completed"}`))
	s.Completed("web_search_call", 1, "ws_2")
	s.Completed("image_generation_call", 6, "ig_1") // its done event too large to read
	s.Item(3, []byte(`{"type":"code_interpreter_call","id":"ci_1","container_id":"cntr_A"}`))
	s.Output([]byte(output))
	if got := s.Apply(Usage{Input: 7}); got != want {
		t.Errorf("stream: %+v, want %+v", got, want)
	}

	// Items without ids count by position, once.
	var n ToolCalls
	n.Item(0, []byte(`{"type":"web_search_call"}`))
	n.Output([]byte(`[{"type":"web_search_call"},{"type":"web_search_call"}]`))
	if got := n.Apply(Usage{}); got.WebSearches != 2 {
		t.Errorf("items without ids: %+v, want 2 searches", got)
	}

	var empty ToolCalls
	empty.Output([]byte(`null`))
	empty.Output(nil)
	if got := empty.Apply(Usage{Input: 3}); got != (Usage{Input: 3}) || empty.seen != nil {
		t.Errorf("no tool calls: %+v, seen %v", got, empty.seen)
	}
}

// TestToolCallsBounded checks that an endless stream of tool items stops
// growing the memory of the count.
func TestToolCallsBounded(t *testing.T) {
	var c ToolCalls
	for i := range int64(maxToolKeys + 100) {
		c.Completed("web_search_call", i, "")
	}
	if len(c.seen) != maxToolKeys || c.calls.WebSearches != maxToolKeys+100 {
		t.Errorf("remembered %d keys, counted %d", len(c.seen), c.calls.WebSearches)
	}
}
