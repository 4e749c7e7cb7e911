package chatproxy

import (
	"net/http"
	"strings"
	"testing"

	"github.com/caddy-air/caddy-air/apierror"
	"github.com/caddy-air/caddy-air/billing"
)

// sixteenMiB is the size of the deep bodies below: the default
// max_request_body, and far past what a recursive validator survives.
const sixteenMiB = 16 << 20

func TestInspectRejectsDeepNesting(t *testing.T) {
	nest := func(open, close string, n int) string {
		return strings.Repeat(open, n) + strings.Repeat(close, n)
	}
	inspects := []struct {
		name    string
		inspect func([]byte, int) (Inspected, *apierror.Error)
	}{{"chat", InspectChat}, {"messages", InspectMessages}}
	for i, tc := range []struct {
		body  string
		limit int
		want  string // the message of the error, "" when accepted
	}{
		{strings.Repeat("[", sixteenMiB), 0, "the request body nests deeper than the limit of 128 levels"},
		{strings.Repeat(`{"a":`, sixteenMiB/5), 0, "the request body nests deeper than the limit of 128 levels"},
		{`{"model":"m","messages":[{"role":"user","content":"x"}],"x":` + strings.Repeat("[", sixteenMiB-64), 0, "the request body nests deeper than the limit of 128 levels"},
		{`{"model":"m","messages":[{"role":"user","content":"x"}],"x":` + nest("[", "]", 127) + `}`, 0, ""},
		{`{"model":"m","messages":[{"role":"user","content":"x"}],"x":` + nest("[", "]", 128) + `}`, 0, "the request body nests deeper than the limit of 128 levels"},
		{`{"model":"m","messages":[{"role":"user","content":"x"}],"x":` + strings.Repeat(`{"a":`, 128) + "1" + strings.Repeat("}", 129), 0, "the request body nests deeper than the limit of 128 levels"},
		{`{"model":"m","messages":[{"role":"user","content":"x"}],"x":[[1]]}`, 3, ""},
		{`{"model":"m","messages":[{"role":"user","content":"x"}],"x":[[1]]}`, 2, "the request body nests deeper than the limit of 2 levels"},
		{`{"model":"m","messages":[{"role":"user","content":"` + strings.Repeat("[", sixteenMiB-128) + `"}]}`, 0, ""},
		{`{"model":"m","messages":[{"role":"user","content":"x"}],"x":[[1]]`, 0, "the request body is not valid JSON"},
	} {
		for _, in := range inspects {
			_, e := in.inspect([]byte(tc.body), tc.limit)
			switch {
			case tc.want == "" && e != nil:
				t.Errorf("Test %d (%s): rejected: %s", i, in.name, e.Message)
			case tc.want == "":
			case e == nil:
				t.Errorf("Test %d (%s): accepted, want %q", i, in.name, tc.want)
			case e.Status != http.StatusBadRequest || e.Type != apierror.TypeInvalidRequest || e.Message != tc.want:
				t.Errorf("Test %d (%s): got %d %s %q, want 400 invalid_request_error %q", i, in.name, e.Status, e.Type, e.Message, tc.want)
			}
		}
	}
}

// TestTapDeepChunk feeds the tap a hostile upstream's chunks, nested far
// past the limit: each is forwarded untouched and counted whole as output,
// and the usage of a later, sound chunk is still read.
func TestTapDeepChunk(t *testing.T) {
	deep := strings.Repeat("[", 100_000) + strings.Repeat("]", 100_000)
	for i, tc := range []struct {
		proto   Protocol
		payload string
		usage   string // a sound usage event that follows
		want    billing.Usage
	}{
		{OpenAI, `{"choices":[{"delta":{"content":` + deep + `}}]}`,
			`data: {"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":6}}` + "\n\n", billing.Usage{Input: 5, Output: 6}},
		{OpenAI, `{"choices":[],"usage":{"prompt_tokens":1,"x":` + deep + `}}`,
			`data: {"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":6}}` + "\n\n", billing.Usage{Input: 5, Output: 6}},
		{OpenAI, strings.Repeat(`{"a":`, 100_000),
			`data: {"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":6}}` + "\n\n", billing.Usage{Input: 5, Output: 6}},
		{Anthropic, `{"type":"message_start","message":{"usage":{"input_tokens":9,"x":` + deep + `}}}`,
			"event: message_delta\ndata: {\"type\":\"message_delta\",\"usage\":{\"output_tokens\":6}}\n\n", billing.Usage{Output: 6}},
		{Anthropic, `{"type":"content_block_delta","delta":{"type":"text_delta","text":` + deep + `}}`,
			"event: message_delta\ndata: {\"type\":\"message_delta\",\"usage\":{\"output_tokens\":6}}\n\n", billing.Usage{Output: 6}},
	} {
		tp := tap{proto: tc.proto, strip: true}
		ev := "data: " + tc.payload + "\n\n"
		if got := tp.event([]byte(ev)); string(got) != ev {
			t.Errorf("Test %d: the deep event was changed (%d bytes forwarded of %d)", i, len(got), len(ev))
		}
		if tp.outBytes != int64(len(tc.payload)) {
			t.Errorf("Test %d: counted %d output bytes, want the payload's %d", i, tp.outBytes, len(tc.payload))
		}
		tp.event([]byte(tc.usage))
		if u, src := tp.result(0, false, false); u != tc.want || src != billing.SourceReported {
			t.Errorf("Test %d: usage %+v %s, want %+v reported", i, u, src, tc.want)
		}
	}
	// The tap's limit is its own: a chunk within the default limit but
	// over a lower one is unparsable there.
	tp := tap{proto: OpenAI, maxDepth: 3}
	payload := `{"choices":[{"delta":{"content":"abc"}}],"usage":{"prompt_tokens":1}}`
	tp.event([]byte("data: " + payload + "\n\n"))
	if tp.outBytes != int64(len(payload)) || tp.reported {
		t.Errorf("limit 3: %d output bytes, reported %v; want %d and not reported", tp.outBytes, tp.reported, len(payload))
	}
}

// TestTapDeepBody gives the tap complete non-streaming bodies nested far
// past the limit: their usage is not read and their size is the output.
func TestTapDeepBody(t *testing.T) {
	for i, tc := range []struct {
		proto Protocol
		body  string
	}{
		{OpenAI, `{"usage":{"prompt_tokens":5,"completion_tokens":6},"x":` + strings.Repeat("[", 100_000) + strings.Repeat("]", 100_000) + `}`},
		{OpenAI, strings.Repeat("[", sixteenMiB)},
		{Anthropic, `{"usage":{"input_tokens":5,"output_tokens":6},"content":[{"type":"text","text":` + strings.Repeat(`{"a":`, 100_000) + `}]}`},
	} {
		tp := tap{proto: tc.proto}
		tp.body([]byte(tc.body), true)
		if tp.reported || tp.outBytes != int64(len(tc.body)) {
			t.Errorf("Test %d: reported %v, %d output bytes; want an estimate from all %d bytes", i, tp.reported, tp.outBytes, len(tc.body))
		}
	}
}

// TestTapDeepTruncatedBody covers the reads that run on unchecked bytes: a
// truncated body, which cannot be valid JSON, and the tail of one too large
// to keep. gjson's Get, which they use, skips nested values in a loop; this
// test fails (by crashing) if an upgrade makes it recurse.
func TestTapDeepTruncatedBody(t *testing.T) {
	deep := strings.Repeat("[", sixteenMiB)
	tp := tap{proto: OpenAI}
	tp.body([]byte(`{"x":`+deep), false)
	tp.tailUsage([]byte(`"usage":{"prompt_tokens":3,"x":` + deep))
	tp.tailUsage([]byte(`"usage":` + deep))
	if tp.reported {
		t.Errorf("usage %+v read from deep bytes", tp.usage)
	}
	tp.tailUsage([]byte(deep[:1<<20] + `"usage":{"prompt_tokens":3,"completion_tokens":4}}`))
	if u := tp.usage; !tp.reported || u.Input != 3 || u.Output != 4 {
		t.Errorf("usage after deep bytes: %+v, reported %v", u, tp.reported)
	}
}
