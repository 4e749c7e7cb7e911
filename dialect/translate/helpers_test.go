package translate

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// answer runs an upstream answer through x's Writer as the proxy writes
// it (headers, then the body in pieces of size n, or whole when n is 0)
// and returns what the client got.
func answer(t *testing.T, x *Exchange, status int, contentType, body string, n int) *httptest.ResponseRecorder {
	t.Helper()
	rec := httptest.NewRecorder()
	tw := x.Writer(rec)
	tw.Header().Set("Content-Type", contentType)
	tw.WriteHeader(status)
	b := []byte(body)
	if n <= 0 {
		n = len(b)
	}
	for len(b) > 0 {
		k := min(n, len(b))
		if _, err := tw.Write(b[:k]); err != nil {
			t.Fatal(err)
		}
		b = b[k:]
	}
	tw.Close()
	return rec
}

// mustRequest decodes body for the pair, failing the test on an error.
func mustRequest(t *testing.T, client, provider, body string, o Options) *Exchange {
	t.Helper()
	tr := For(client, provider)
	if tr == nil {
		t.Fatalf("no translation from %s to %s", client, provider)
	}
	x, err := tr.Request([]byte(body), o)
	if err != nil {
		t.Fatalf("request: %v", err)
	}
	return x
}

const sse = "text/event-stream"

var _ = http.StatusOK

// anthropicStream is a Messages stream with the given message_start and
// message_delta usage around blocks.
func anthropicStream(startUsage, endUsage string, blocks ...string) string {
	s := "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"c\",\"content\":[],\"stop_reason\":null,\"stop_sequence\":null,\"usage\":" + startUsage + "}}\n\n" +
		"event: ping\ndata: {\"type\": \"ping\"}\n\n"
	for _, b := range blocks {
		s += b
	}
	stop := "end_turn"
	if strings.Contains(s, `"tool_use"`) {
		stop = "tool_use"
	}
	return s + "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"" + stop + "\",\"stop_sequence\":null},\"usage\":" + endUsage + "}\n\n" +
		"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
}

func blockEvents(i int, start string, deltas ...string) string {
	idx := strconv.Itoa(i)
	s := "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":" + idx + ",\"content_block\":" + start + "}\n\n"
	for _, d := range deltas {
		s += "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":" + idx + ",\"delta\":" + d + "}\n\n"
	}
	return s + "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":" + idx + "}\n\n"
}

func textBlock(i int, text string) string {
	return blockEvents(i, `{"type":"text","text":""}`, `{"type":"text_delta","text":`+strconv.Quote(text)+`}`)
}

func thinkingBlock(i int, text, sig string) string {
	return blockEvents(i, `{"type":"thinking","thinking":"","signature":""}`,
		`{"type":"thinking_delta","thinking":`+strconv.Quote(text)+`}`, `{"type":"signature_delta","signature":`+strconv.Quote(sig)+`}`)
}

func toolBlock(i int, id, name string, fragments ...string) string {
	var ds []string
	for _, f := range fragments {
		ds = append(ds, `{"type":"input_json_delta","partial_json":`+strconv.Quote(f)+`}`)
	}
	return blockEvents(i, `{"type":"tool_use","id":"`+id+`","name":"`+name+`","input":{}}`, ds...)
}

// dataLines returns the data of every SSE event of body.
func dataLines(body string) []string {
	var out []string
	for _, line := range strings.Split(body, "\n") {
		if d, ok := strings.CutPrefix(line, "data: "); ok {
			out = append(out, d)
		}
	}
	return out
}

// lastUsage is the usage of a chat stream's last chunk that has one.
func lastUsage(t *testing.T, body string) gjson.Result {
	t.Helper()
	var u gjson.Result
	for _, d := range dataLines(body) {
		if v := gjson.Get(d, "usage"); v.IsObject() {
			u = v
		}
	}
	if !u.Exists() {
		t.Fatalf("no usage in\n%s", body)
	}
	return u
}

// messagesResult is a Messages stream accumulated as a client would.
type messagesResult struct {
	blocks        []*accBlock
	stop          string
	input, output int64
	cacheRead     int64
	stopped       bool
	errType       string
}

type accBlock struct {
	typ, id, name, text, signature string
	json                           strings.Builder
}

// accumulateMessages accumulates a Messages stream, checking that every
// delta names a started block.
func accumulateMessages(t *testing.T, body string) messagesResult {
	t.Helper()
	var m messagesResult
	for _, d := range dataLines(body) {
		ev := gjson.Parse(d)
		switch ev.Get("type").Str {
		case "message_start":
			m.input = ev.Get("message.usage.input_tokens").Int()
		case "content_block_start":
			if int(ev.Get("index").Int()) != len(m.blocks) {
				t.Fatalf("block %d started as block %d", ev.Get("index").Int(), len(m.blocks))
			}
			cb := ev.Get("content_block")
			m.blocks = append(m.blocks, &accBlock{typ: cb.Get("type").Str, id: cb.Get("id").Str, name: cb.Get("name").Str})
		case "content_block_delta":
			i := int(ev.Get("index").Int())
			if i >= len(m.blocks) {
				t.Fatalf("delta of unknown block %d", i)
			}
			b, dl := m.blocks[i], ev.Get("delta")
			b.text += dl.Get("text").Str + dl.Get("thinking").Str
			b.signature += dl.Get("signature").Str
			b.json.WriteString(dl.Get("partial_json").Str)
		case "message_delta":
			m.stop = ev.Get("delta.stop_reason").Str
			m.output = ev.Get("usage.output_tokens").Int()
			if v := ev.Get("usage.input_tokens"); v.Exists() {
				m.input = v.Int()
			}
			m.cacheRead = ev.Get("usage.cache_read_input_tokens").Int()
		case "message_stop":
			m.stopped = true
		case "error":
			m.errType = ev.Get("error.type").Str
		}
	}
	return m
}
