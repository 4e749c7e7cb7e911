package translate

import (
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// A malformed provider event ends the client's stream with its own error
// event, and nothing after it; a cut stream too.
func TestWriterBadStreams(t *testing.T) {
	x := mustRequest(t, Messages, Chat, `{"model":"g","max_tokens":10,"stream":true,"messages":[{"role":"user","content":"hi"}]}`, Options{})
	good := `data: {"id":"c1","model":"g","choices":[{"index":0,"delta":{"content":"Hel"}}]}` + "\n\n"
	for i, tc := range []struct{ stream, errType string }{
		{good + "data: {\"id\":\n\n" + good + "data: [DONE]\n\n", "api_error"},
		{good, "overloaded_error"}, // cut: no [DONE]
		{good + `data: {"error":{"message":"quota","type":"insufficient_quota","code":429}}` + "\n\n", "rate_limit_error"},
	} {
		rec := answer(t, x, 200, sse, tc.stream, 5)
		m := accumulateMessages(t, rec.Body.String())
		body := rec.Body.String()
		if m.errType != tc.errType || m.stopped || len(m.blocks) != 1 || m.blocks[0].text != "Hel" ||
			!strings.HasSuffix(body, "\n\n") || strings.Count(body, "event: error") != 1 {
			t.Errorf("Test %d: %+v from\n%s", i, m, body)
		}
	}
	// A whole answer that cannot be read is a 502 in the client's shape.
	x = mustRequest(t, Chat, Messages, `{"model":"c","messages":[{"role":"user","content":"hi"}]}`, Options{})
	rec := answer(t, x, 200, "application/json", `{"type":"message","content":`, 0)
	if rec.Code != 502 || gjson.Get(rec.Body.String(), "error.type").Str != "server_error" {
		t.Errorf("unreadable answer: %d %s", rec.Code, rec.Body)
	}
	// An error status is translated, its Retry-After kept.
	rec = answer(t, x, 429, "application/json", `{"type":"error","error":{"type":"rate_limit_error","message":"slow"}}`, 0)
	if rec.Code != 429 || gjson.Get(rec.Body.String(), "error.code").Str != "rate_limit_exceeded" || gjson.Get(rec.Body.String(), "error.message").Str != "slow" {
		t.Errorf("429: %d %s", rec.Code, rec.Body)
	}
}
