package chatproxy

import (
	"testing"

	"github.com/caddy-air/caddy-air/billing"
	"github.com/tidwall/gjson"
)

func TestDeleteMember(t *testing.T) {
	for i, tc := range []struct{ in, want string }{
		{`data: {"id":"1","usage":null}` + "\n\n", `data: {"id":"1"}` + "\n\n"},
		{`data: {"usage":null,"id":"1"}` + "\n\n", `data: {"id":"1"}` + "\n\n"},
		{`data: {"id":"1" , "usage" : null }` + "\n\n", `data: {"id":"1"  }` + "\n\n"},
		{`data: { "usage":null , "id":"1"}` + "\n\n", `data: {  "id":"1"}` + "\n\n"},
		{`data: {"usage":null}` + "\n\n", `data: {}` + "\n\n"},
		{`data: {"id":"1","usage":{"prompt_tokens":1},"x":[]}` + "\n\n", `data: {"id":"1","x":[]}` + "\n\n"},
	} {
		ev := []byte(tc.in)
		a, b, _ := dataField(ev)
		u := gjson.Get(str(ev[a:b]), "usage")
		if got := string(deleteMember(ev, a, a+u.Index, a+u.Index+len(u.Raw))); got != tc.want {
			t.Errorf("Test %d: got %q, want %q", i, got, tc.want)
		}
	}
}

func TestTapAnthropicDelta(t *testing.T) {
	tp := tap{proto: Anthropic}
	for _, ev := range []string{
		"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":10,\"cache_creation_input_tokens\":100,\"cache_read_input_tokens\":5,\"output_tokens\":1}}}\n\n",
		"event: message_delta\ndata: {\"type\":\"message_delta\",\"usage\":{\"output_tokens\":7}}\n\n",
		"event: message_delta\ndata: {\"type\":\"message_delta\",\"usage\":{\"input_tokens\":12,\"cache_read_input_tokens\":6,\"output_tokens\":42}}\n\n",
	} {
		tp.event([]byte(ev))
	}
	u, src := tp.result(0, false, false)
	want := billing.Usage{Input: 12, CacheCreation: 100, CacheRead: 6, Output: 42}
	if u != want || src != billing.SourceReported {
		t.Errorf("got %+v %s, want %+v reported", u, src, want)
	}
}

// TestTapCutStreamWithoutStartUsage: a Messages stream whose start
// reported no input (a cloud's, transcoded: Bedrock and Gemini report
// usage only at the end) and which broke before its end bills the
// prompt's estimate, not zero input; one whose start reported input
// keeps it.
func TestTapCutStreamWithoutStartUsage(t *testing.T) {
	for i, tc := range []struct {
		start string
		want  billing.Usage
	}{
		{`{"input_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":0}`, billing.Usage{Input: 100, Output: 2}},
		{`{"input_tokens":0,"cache_read_input_tokens":30,"output_tokens":0}`, billing.Usage{CacheRead: 30, Output: 2}},
		{`{"input_tokens":7,"output_tokens":1}`, billing.Usage{Input: 7, Output: 2}},
	} {
		tp := tap{proto: Anthropic}
		tp.event([]byte("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":" + tc.start + "}}\n\n"))
		tp.event([]byte("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Mock rep\"}}\n\n"))
		u, src := tp.result(400, true, false)
		if u != tc.want || src != billing.SourcePartial {
			t.Errorf("Test %d: got %+v %s, want %+v partial", i, u, src, tc.want)
		}
	}
}

func TestTapEstimates(t *testing.T) {
	tp := tap{proto: OpenAI}
	tp.event([]byte(`data: {"choices":[{"delta":{"content":"12345678","reasoning_content":"abcd"}}]}` + "\n\n"))
	tp.event([]byte(`data: {"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"name":"f","arguments":"{}"}}]}}]}` + "\n\n"))
	u, src := tp.result(400, false, false)
	if want := (billing.Usage{Input: 100, Output: 4}); u != want || src != billing.SourceEstimated {
		t.Errorf("got %+v %s, want %+v estimated", u, src, want)
	}
	if _, src := tp.result(400, true, true); src != billing.SourcePartial {
		t.Errorf("cut stream: source %s, want partial", src)
	}
	empty := tap{}
	if u, _ := empty.result(0, false, false); u.Input != 1 || u.Output != 1 {
		t.Errorf("empty estimate %+v, want at least 1 token each way", u)
	}
}

func TestTapErrorEvents(t *testing.T) {
	for i, tc := range []struct {
		proto Protocol
		ev    string
		want  bool
	}{
		{OpenAI, `data: {"choices":[],"error":null}` + "\n\n", false},
		{OpenAI, `data: {"error":{"message":"overloaded","code":"server_error"}}` + "\n\n", true},
		{Anthropic, "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n", true},
		{Anthropic, "event: ping\ndata: {\"type\":\"ping\"}\n\n", false},
	} {
		tp := tap{proto: tc.proto}
		if out := tp.event([]byte(tc.ev)); string(out) != tc.ev {
			t.Errorf("Test %d: event changed to %q", i, out)
		}
		if tp.upstreamError != tc.want {
			t.Errorf("Test %d: upstreamError=%v, want %v", i, tp.upstreamError, tc.want)
		}
	}
}

func TestTapMalformedChunk(t *testing.T) {
	payload := `{"choices":[{"delta":{"content":"abc"}}],"usage":null`
	ev := "data: " + payload + "\n\n"
	tp := tap{proto: OpenAI, strip: true}
	if got := string(tp.event([]byte(ev))); got != ev {
		t.Errorf("forwarded %q, want it untouched", got)
	}
	if tp.outBytes != int64(len(payload)) {
		t.Errorf("counted %d output bytes, want the whole payload's %d", tp.outBytes, len(payload))
	}
}

func TestTapChunkPrefix(t *testing.T) {
	tp := tap{proto: OpenAI, strip: true}
	for i, tc := range []struct {
		payload, want string
		prefix        string // the prefix the tap keeps afterwards
		out           int64  // output bytes counted so far
	}{
		{`{"id":"a","choices":[{"delta":{"content":"12"}}],"usage":null}`, `{"id":"a","choices":[{"delta":{"content":"12"}}]}`, `{"id":"a","choices":`, 2},
		{`{"id":"a","choices":[{"delta":{"content":"345"}}],"usage":null}`, `{"id":"a","choices":[{"delta":{"content":"345"}}]}`, `{"id":"a","choices":`, 5},
		{`{"id":"b","choices":[{"delta":{"content":"6"}}]}`, `{"id":"b","choices":[{"delta":{"content":"6"}}]}`, `{"id":"b","choices":`, 6},
		{`{"usage":null,"choices":[{"delta":{"content":"7"}}]}`, `{"choices":[{"delta":{"content":"7"}}]}`, `{"id":"b","choices":`, 7},
		{`{"id":"b","choices":[{"delta":{"content":"8"}}],"error":{"message":"x"}}`, `{"id":"b","choices":[{"delta":{"content":"8"}}],"error":{"message":"x"}}`, `{"id":"b","choices":`, 8},
		{`{"id":"b","choices":[],"usage":{"prompt_tokens":5,"completion_tokens":6}}`, ``, `{"id":"b","choices":`, 8},
		{`{"id":"b","choices":[{"delta":`, `{"id":"b","choices":[{"delta":`, `{"id":"b","choices":`, 8 + 30},
	} {
		ev := "data: " + tc.payload + "\n\n"
		want := ""
		if tc.want != "" {
			want = "data: " + tc.want + "\n\n"
		}
		if got := string(tp.event([]byte(ev))); got != want {
			t.Errorf("event %d: forwarded %q, want %q", i, got, want)
		}
		if string(tp.prefix) != tc.prefix || tp.outBytes != tc.out {
			t.Errorf("event %d: prefix %q, %d output bytes; want %q, %d", i, tp.prefix, tp.outBytes, tc.prefix, tc.out)
		}
	}
	u, src := tp.result(0, false, false)
	if want := (billing.Usage{Input: 5, Output: 6}); u != want || src != billing.SourceReported || !tp.upstreamError {
		t.Errorf("usage %+v %s, error %v; want %+v reported, error", u, src, tp.upstreamError, want)
	}
}
