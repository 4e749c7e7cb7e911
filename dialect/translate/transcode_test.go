package translate

import (
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/caddy-air/caddy-air/providers"
	"github.com/tidwall/gjson"
)

// geminiChunk is one streamGenerateContent SSE event.
func geminiChunk(json string) string { return "data: " + json + "\r\n\r\n" }

// transcoded runs a Gemini answer through x.Transcode, the body read in
// one-byte pieces, and returns the response and what its body read.
func transcoded(t *testing.T, x *Exchange, status int, h http.Header, body string) (*http.Response, string, error) {
	t.Helper()
	resp := &http.Response{StatusCode: status, Header: h, Body: io.NopCloser(iotest.OneByteReader(strings.NewReader(body)))}
	tr := x.Transcoder()
	if tr == nil {
		t.Fatal("a gemini exchange has no transcoder")
	}
	resp = tr(resp)
	b, err := io.ReadAll(resp.Body)
	return resp, string(b), err
}

func TestTranscodeGeminiStreamIntoMessages(t *testing.T) {
	x := mustRequest(t, Messages, Gemini, `{"model":"g","max_tokens":100,"stream":true,"messages":[{"role":"user","content":"hi"}]}`, Options{})
	body := geminiChunk(`{"candidates":[{"content":{"role":"model","parts":[{"text":"think","thought":true}]}}],"responseId":"r1","modelVersion":"gemini-2.5-pro"}`) +
		geminiChunk(`{"candidates":[{"content":{"role":"model","parts":[{"text":"Hel"}]}}],"responseId":"r1"}`) +
		geminiChunk(`{"candidates":[{"content":{"role":"model","parts":[{"text":"lo"}]},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":1000,"candidatesTokenCount":20,"cachedContentTokenCount":600,"thoughtsTokenCount":30,"totalTokenCount":1050},"responseId":"r1"}`)
	resp, out, err := transcoded(t, x, 200, http.Header{"Content-Type": {"text/event-stream"}}, body)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Errorf("Content-Type = %q", ct)
	}
	m := accumulateMessages(t, out)
	if len(m.blocks) != 2 || m.blocks[0].typ != "thinking" || m.blocks[0].text != "think" || m.blocks[1].text != "Hello" {
		t.Errorf("blocks %+v", m.blocks)
	}
	// The last chunk's usage, exactly: the cached tokens out of the
	// input, the thoughts in the output.
	if m.input != 400 || m.cacheRead != 600 || m.output != 50 || m.stop != "end_turn" || !m.stopped {
		t.Errorf("usage %+v, want input 400, cache read 600, output 50, end_turn", m)
	}
	if r := gjson.Get(dataLines(out)[len(dataLines(out))-2], "usage.output_tokens_details.thinking_tokens").Int(); r != 30 {
		t.Errorf("thinking tokens %d, want 30 in\n%s", r, out)
	}
	if !strings.HasSuffix(out, "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n") {
		t.Errorf("stream does not end with message_stop:\n%s", out)
	}
}

func TestTranscodeGeminiCutStreamIsCut(t *testing.T) {
	x := mustRequest(t, Chat, Gemini, `{"model":"g","stream":true,"messages":[{"role":"user","content":"hi"}]}`, Options{})
	for _, tail := range []string{"", `data: {"candidates":[{"content":{"parts":[{"te`} {
		body := geminiChunk(`{"candidates":[{"content":{"role":"model","parts":[{"text":"Hel"}]}}],"responseId":"r1"}`) + tail
		_, out, err := transcoded(t, x, 200, http.Header{"Content-Type": {"text/event-stream"}}, body)
		if !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("tail %q: err = %v, want io.ErrUnexpectedEOF", tail, err)
		}
		if strings.Contains(out, "message_stop") || strings.Contains(out, "event: error") {
			t.Errorf("tail %q: a cut stream got a final event:\n%s", tail, out)
		}
		if !strings.Contains(out, `"text":"Hel"`) {
			t.Errorf("tail %q: the text before the cut is lost:\n%s", tail, out)
		}
	}
}

func TestTranscodeGeminiMalformedChunkIsAnErrorEvent(t *testing.T) {
	x := mustRequest(t, Chat, Gemini, `{"model":"g","stream":true,"messages":[{"role":"user","content":"hi"}]}`, Options{})
	_, out, err := transcoded(t, x, 200, http.Header{"Content-Type": {"text/event-stream"}}, geminiChunk(`{"candidates":[`))
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	if !strings.Contains(out, "event: error") {
		t.Errorf("no error event:\n%s", out)
	}
}

func TestTranscodeGeminiErrors(t *testing.T) {
	x := mustRequest(t, Chat, Gemini, `{"model":"g","messages":[{"role":"user","content":"hi"}]}`, Options{})
	for _, tc := range []struct {
		status     int
		body       string
		wantType   string
		retryAfter string
	}{
		{429, `{"error":{"code":429,"status":"RESOURCE_EXHAUSTED","message":"quota","details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"17s"}]}}`, "rate_limit_error", "17"},
		{500, `{"error":{"code":500,"status":"INTERNAL","message":"boom"}}`, "api_error", ""},
		{503, `not json`, "overloaded_error", ""},
	} {
		resp, out, err := transcoded(t, x, tc.status, http.Header{"Content-Type": {"application/json"}}, tc.body)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != tc.status {
			t.Errorf("%d: status %d", tc.status, resp.StatusCode)
		}
		if got := gjson.Get(out, "error.type").Str; got != tc.wantType || gjson.Get(out, "type").Str != "error" {
			t.Errorf("%d: body %s, want an Anthropic %s", tc.status, out, tc.wantType)
		}
		if got := resp.Header.Get("Retry-After"); got != tc.retryAfter {
			t.Errorf("%d: Retry-After %q, want %q", tc.status, got, tc.retryAfter)
		}
	}
}

func TestTranscodeGeminiWholeAnswer(t *testing.T) {
	x := mustRequest(t, Chat, Gemini, `{"model":"g","messages":[{"role":"user","content":"hi"}]}`, Options{})
	body := `{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"name":"f","args":{"q":1}}}]},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":10,"candidatesTokenCount":5,"thoughtsTokenCount":7},"responseId":"r9"}`
	resp, out, err := transcoded(t, x, 200, http.Header{"Content-Type": {"application/json"}, "Content-Length": {"999"}}, body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Header.Get("Content-Length") != strconv.Itoa(len(out)) {
		t.Errorf("Content-Length %s for %d bytes", resp.Header.Get("Content-Length"), len(out))
	}
	if gjson.Get(out, "stop_reason").Str != "tool_use" || gjson.Get(out, "content.0.name").Str != "f" || gjson.Get(out, "content.0.input.q").Int() != 1 {
		t.Errorf("answer %s", out)
	}
	if gjson.Get(out, "usage.input_tokens").Int() != 10 || gjson.Get(out, "usage.output_tokens").Int() != 12 {
		t.Errorf("usage %s, want input 10, output 12 (thoughts included)", gjson.Get(out, "usage").Raw)
	}
}

func TestCloudTranslators(t *testing.T) {
	for _, c := range []string{Chat, Messages} {
		for _, p := range []string{Gemini, Vertex} {
			tr := For(c, p)
			if tr == nil || tr.Wire != Messages || !providers.IsCloud(p) {
				t.Errorf("%s → %s: %+v", c, p, tr)
			}
		}
	}
	if For(Gemini, Chat) != nil {
		t.Error("gemini is no client protocol")
	}
	for name := range codecs {
		if got := CounterOf(name) != nil; got != (name == Gemini || name == Vertex) {
			t.Errorf("%s: counts tokens %v", name, got)
		}
	}
	// providers.IsCloud is the one list of cloud protocols: it names
	// exactly the codecs no client speaks.
	for name, c := range codecs {
		if cloud := c.client == nil && c.provider != nil; cloud != providers.IsCloud(name) {
			t.Errorf("%s: a cloud codec %v, providers.IsCloud %v", name, cloud, providers.IsCloud(name))
		}
	}
}

// BenchmarkTranscodeGeminiStream transcodes a 20-chunk Gemini stream into
// Messages, as a cloud attempt's body is read.
func BenchmarkTranscodeGeminiStream(b *testing.B) {
	x, err := For(Messages, Gemini).Request([]byte(`{"model":"g","max_tokens":100,"stream":true,"messages":[{"role":"user","content":"hi"}]}`), Options{})
	if err != nil {
		b.Fatal(err)
	}
	var sb strings.Builder
	for range 20 {
		sb.WriteString(geminiChunk(`{"candidates":[{"content":{"role":"model","parts":[{"text":"tok \"quoted\" "}]}}],"responseId":"r1","modelVersion":"gemini-2.5-flash"}`))
	}
	sb.WriteString(geminiChunk(`{"candidates":[{"content":{"role":"model","parts":[{"text":"end"}]},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":10,"candidatesTokenCount":21},"responseId":"r1"}`))
	body := sb.String()
	buf := make([]byte, 32<<10)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		resp := x.Transcode(&http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: io.NopCloser(strings.NewReader(body))})
		for {
			if _, err := resp.Body.Read(buf); err != nil {
				break
			}
		}
	}
}

// The Gemini bugs seen in peers (ARCHITECTURE §9), through the whole
// chain a Chat Completions client's answer takes: the Gemini stream
// transcoded into Messages, then written as Chat Completions.
//
// The usage may also come after the finish reason, in a last chunk of its
// own (Vertex AI's shape; the chunks before carry the prompt's count
// alone): that chunk's usage is the one billed.
func TestPeerBugGeminiLastChunkAndThoughts(t *testing.T) {
	const usage = `"usageMetadata":{"promptTokenCount":100,"candidatesTokenCount":2,"cachedContentTokenCount":60,"thoughtsTokenCount":40}`
	const running = `"usageMetadata":{"promptTokenCount":100,"totalTokenCount":100}`
	for _, tc := range []struct{ name, body string }{
		{"usage with the finish reason", geminiChunk(`{"candidates":[{"content":{"role":"model","parts":[{"text":"hm","thought":true}]}}],"responseId":"r1"}`) +
			geminiChunk(`{"candidates":[{"content":{"role":"model","parts":[{"text":"Hel"}]}}],"responseId":"r1"}`) +
			// The last chunk carries text, the finish reason and the usage.
			geminiChunk(`{"candidates":[{"content":{"role":"model","parts":[{"text":"lo"}]},"finishReason":"STOP"}],`+usage+`,"responseId":"r1"}`)},
		{"usage after the finish reason", geminiChunk(`{"candidates":[{"content":{"role":"model","parts":[{"text":"hm","thought":true}]}}],`+running+`,"responseId":"r1"}`) +
			geminiChunk(`{"candidates":[{"content":{"role":"model","parts":[{"text":"Hel"}]}}],`+running+`,"responseId":"r1"}`) +
			geminiChunk(`{"candidates":[{"content":{"role":"model","parts":[{"text":"lo"}]},"finishReason":"STOP"}],`+running+`,"responseId":"r1"}`) +
			geminiChunk(`{`+usage+`,"modelVersion":"gemini-2.5-pro","responseId":"r1"}`)},
	} {
		x := mustRequest(t, Chat, Gemini, `{"model":"g","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`, Options{})
		_, messages, err := transcoded(t, x, 200, http.Header{"Content-Type": {"text/event-stream"}}, tc.body)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		rec := answer(t, x, 200, sse, messages, 9)
		out := rec.Body.String()
		var text, finish string
		for _, d := range dataLines(out) {
			text += gjson.Get(d, "choices.0.delta.content").Str
			finish += gjson.Get(d, "choices.0.finish_reason").Str
		}
		u := lastUsage(t, out)
		// The last chunk's text and usage are there; the thoughts count as
		// completion tokens, the cached tokens in the prompt's.
		if text != "Hello" || finish != "stop" || u.Get("prompt_tokens").Int() != 100 || u.Get("prompt_tokens_details.cached_tokens").Int() != 60 ||
			u.Get("completion_tokens").Int() != 42 || u.Get("completion_tokens_details.reasoning_tokens").Int() != 40 || !strings.HasSuffix(out, "data: [DONE]\n\n") {
			t.Errorf("%s: text %q, finish %q, usage %s in\n%s", tc.name, text, finish, u.Raw, out)
		}
	}
}
