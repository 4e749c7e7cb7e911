package responses

import (
	"github.com/caddy-air/caddy-air/billing"
	"testing"
)

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
	want := billing.Usage{Input: 7, WebSearches: 2, FileSearches: 1, CodeSessions: 2, ImageCalls: 1}

	var c ToolCalls
	c.Output([]byte(output))
	if got := c.Apply(billing.Usage{Input: 7}); got != want {
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
	if got := s.Apply(billing.Usage{Input: 7}); got != want {
		t.Errorf("stream: %+v, want %+v", got, want)
	}

	// Items without ids count by position, once.
	var n ToolCalls
	n.Item(0, []byte(`{"type":"web_search_call"}`))
	n.Output([]byte(`[{"type":"web_search_call"},{"type":"web_search_call"}]`))
	if got := n.Apply(billing.Usage{}); got.WebSearches != 2 {
		t.Errorf("items without ids: %+v, want 2 searches", got)
	}

	var empty ToolCalls
	empty.Output([]byte(`null`))
	empty.Output(nil)
	if got := empty.Apply(billing.Usage{Input: 3}); got != (billing.Usage{Input: 3}) || empty.seen != nil {
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
