package responses

import (
	"github.com/caddy-air/caddy-air/billing"
	"strings"
	"testing"
)

// TestToolScanPieces feeds a large answer to the scan in pieces of every
// size from 1 byte, so that members split between reads are counted once.
func TestToolScanPieces(t *testing.T) {
	head := largeResponse()
	i := strings.Index(head, `"result": "`)
	small := head[:i] + `"result": "QUJD"}` + head[strings.Index(head, `"},`+"\n"+`    {"type": "message"`)+2:]
	want := billing.Usage{WebSearches: 2, CodeSessions: 1, ImageCalls: 1}
	for _, size := range []int{1, 2, 3, 7, 64, 127, 128, 129, 500, len(small)} {
		var s toolScan
		for j := 0; j < len(small); j += size {
			s.feed([]byte(small[j:min(j+size, len(small))]), false)
		}
		s.feed(nil, true)
		if got := s.apply(billing.Usage{}); got != want {
			t.Errorf("pieces of %d: %+v, want %+v", size, got, want)
		}
	}
}

// largeResponse is a pretty-printed Responses answer larger than the
// engine holds (1 MiB): its generated image makes it so.
func largeResponse() string {
	return `{
  "id": "resp_big",
  "status": "completed",
  "output": [
    {"type": "web_search_call", "id": "ws_1", "status": "completed"},
    {"type" :  "web_search_call", "id": "ws_2", "status": "completed"},
    {"id": "ci_1", "type": "code_interpreter_call", "container_id": "cntr_1", "code": "1"},
    {"id": "ci_2", "type": "code_interpreter_call", "container_id": "cntr_1", "code": "2"},
    {"type": "image_generation_call", "id": "ig_1", "result": "` + strings.Repeat("QUJD", 1<<20) + `"},
    {"type": "message", "id": "m1", "content": [{"type": "output_text", "text": "quoting \"type\": \"web_search_call\" is no call"}]}
  ],
  "usage": {"input_tokens": 40, "output_tokens": 9}
}`
}
