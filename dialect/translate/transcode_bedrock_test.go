package translate

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/caddy-air/caddy-air/dialect/bedrock"
)

// converseStream is a ConverseStream answer: a reasoning block, a text
// block, a tool call, and usage with cache reads and writes.
func converseStream() []byte {
	type obj = map[string]any
	var b bytes.Buffer
	for _, f := range []struct {
		typ     string
		payload obj
	}{
		{"messageStart", obj{"role": "assistant"}},
		{"contentBlockDelta", obj{"contentBlockIndex": 0, "delta": obj{"reasoningContent": obj{"text": "hmm"}}}},
		{"contentBlockDelta", obj{"contentBlockIndex": 0, "delta": obj{"reasoningContent": obj{"signature": "sig-1"}}}},
		{"contentBlockStop", obj{"contentBlockIndex": 0}},
		{"contentBlockDelta", obj{"contentBlockIndex": 1, "delta": obj{"text": "Hel"}}},
		{"contentBlockDelta", obj{"contentBlockIndex": 1, "delta": obj{"text": "lo"}}},
		{"contentBlockStop", obj{"contentBlockIndex": 1}},
		{"contentBlockStart", obj{"contentBlockIndex": 2, "start": obj{"toolUse": obj{"toolUseId": "tooluse_1", "name": "f"}}}},
		{"contentBlockDelta", obj{"contentBlockIndex": 2, "delta": obj{"toolUse": obj{"input": `{"a":`}}}},
		{"contentBlockDelta", obj{"contentBlockIndex": 2, "delta": obj{"toolUse": obj{"input": `1}`}}}},
		{"contentBlockStop", obj{"contentBlockIndex": 2}},
		{"messageStop", obj{"stopReason": "tool_use"}},
		{"metadata", obj{"usage": obj{"inputTokens": 40, "outputTokens": 9, "cacheReadInputTokens": 300, "cacheWriteInputTokens": 200, "totalTokens": 549}}},
	} {
		b.Write(bedrock.EncodeEvent(f.typ, f.payload))
	}
	return b.Bytes()
}

// TestTranscodeBedrockStreamIntoMessages: ConverseStream's binary frames,
// read a byte at a time, become a Messages SSE stream (its Content-Type
// too, so that the proxy reads it as one), named by Bedrock's request id
// and the client's model, with the usage exact: cache reads and writes
// apart from the input.
func TestTranscodeBedrockStreamIntoMessages(t *testing.T) {
	x := mustRequest(t, Messages, Bedrock, `{"model":"claude-bedrock","max_tokens":100,"stream":true,"messages":[{"role":"user","content":"hi"}]}`, Options{})
	h := http.Header{"Content-Type": {bedrock.StreamContentType}, "X-Amzn-Requestid": {"5f1c-req"}}
	resp, out, err := transcoded(t, x, 200, h, string(converseStream()))
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Errorf("Content-Type = %q", ct)
	}
	if id := resp.Header.Get("X-Request-Id"); id != "5f1c-req" {
		t.Errorf("X-Request-Id = %q, want Bedrock's request id", id)
	}
	start := gjson.Parse(dataLines(out)[0])
	if start.Get("message.id").Str != "msg_5f1c-req" || start.Get("message.model").Str != "claude-bedrock" {
		t.Errorf("message_start %s", start.Raw)
	}
	m := accumulateMessages(t, out)
	if len(m.blocks) != 3 || m.blocks[0].typ != "thinking" || m.blocks[0].text != "hmm" || m.blocks[0].signature != "sig-1" ||
		m.blocks[1].text != "Hello" || m.blocks[2].id != "tooluse_1" || m.blocks[2].json.String() != `{"a":1}` {
		t.Errorf("blocks %+v", m.blocks)
	}
	if m.input != 40 || m.cacheRead != 300 || m.output != 9 || m.stop != "tool_use" || !m.stopped ||
		!strings.Contains(out, `"cache_creation_input_tokens":200`) {
		t.Errorf("usage %+v in\n%s", m, out)
	}
}

// TestTranscodeBedrockCutStreamIsCut: a ConverseStream that ends between
// two frames, or inside one, before its last event reads as a cut
// Messages stream (io.ErrUnexpectedEOF, no message_stop), never as a
// clean end.
func TestTranscodeBedrockCutStreamIsCut(t *testing.T) {
	full := converseStream()
	first := len(bedrock.EncodeEvent("messageStart", map[string]any{"role": "assistant"}))
	for i, cut := range []int{first, first + 10, len(full) - 20} {
		x := mustRequest(t, Chat, Bedrock, `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`, Options{})
		_, out, err := transcoded(t, x, 200, http.Header{"Content-Type": {bedrock.StreamContentType}}, string(full[:cut]))
		if !errors.Is(err, io.ErrUnexpectedEOF) || strings.Contains(out, "message_stop") {
			t.Errorf("Test %d: err %v after\n%s", i, err, out)
		}
	}
}

// TestTranscodeBedrockErrors: Bedrock's error answers keep their status
// in Messages' shape; a throttling 429 keeps its Retry-After.
func TestTranscodeBedrockErrors(t *testing.T) {
	for i, tc := range []struct {
		status  int
		typ     string
		header  http.Header
		errType string
	}{
		{429, "ThrottlingException", http.Header{"Retry-After": {"7"}}, "rate_limit_error"},
		{403, "InvalidSignatureException", nil, "authentication_error"},
		{503, "ServiceUnavailableException", nil, "overloaded_error"},
		{400, "ValidationException", nil, "invalid_request_error"},
	} {
		x := mustRequest(t, Messages, Bedrock, `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`, Options{})
		h := http.Header{"Content-Type": {"application/json"}, "X-Amzn-Errortype": {tc.typ + ":http://internal.amazon.com/coral/com.amazon.bedrock/"}}
		for k, v := range tc.header {
			h[k] = v
		}
		resp, out, err := transcoded(t, x, tc.status, h, `{"message":"it failed"}`)
		if err != nil || resp.StatusCode != tc.status || gjson.Get(out, "error.type").Str != tc.errType || gjson.Get(out, "error.message").Str != "it failed" ||
			resp.Header.Get("Retry-After") != tc.header.Get("Retry-After") {
			t.Errorf("Test %d: %d %v %s (%v)", i, resp.StatusCode, resp.Header, out, err)
		}
	}
}

// BenchmarkTranscodeBedrockExchange translates a whole streamed exchange
// of a Messages client to a bedrock model: its ~1 KB request into a
// Converse body, and a 20-delta ConverseStream into Messages SSE.
func BenchmarkTranscodeBedrockExchange(b *testing.B) {
	req := []byte(`{"model":"claude-bedrock","max_tokens":1024,"stream":true,"system":"You are a helpful assistant that answers briefly and precisely, citing the relevant facts and nothing else.",` +
		`"messages":[{"role":"user","content":"` + strings.Repeat("Tell me about the history of the city and its harbour. ", 14) + `"}]}`)
	var stream bytes.Buffer
	stream.Write(bedrock.EncodeEvent("messageStart", map[string]any{"role": "assistant"}))
	for range 20 {
		stream.Write(bedrock.EncodeEvent("contentBlockDelta", map[string]any{"contentBlockIndex": 0, "delta": map[string]any{"text": " deterministic"}}))
	}
	stream.Write(bedrock.EncodeEvent("contentBlockStop", map[string]any{"contentBlockIndex": 0}))
	stream.Write(bedrock.EncodeEvent("messageStop", map[string]any{"stopReason": "end_turn"}))
	stream.Write(bedrock.EncodeEvent("metadata", map[string]any{"usage": map[string]any{"inputTokens": 200, "outputTokens": 20, "totalTokens": 220}}))
	frames := stream.Bytes()
	tr := For(Messages, Bedrock)
	b.ReportAllocs()
	for b.Loop() {
		x, err := tr.Request(req, Options{})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := x.Body("anthropic.claude-3-7-sonnet-20250219-v1:0"); err != nil {
			b.Fatal(err)
		}
		resp := x.Transcode(&http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {bedrock.StreamContentType}}, Body: io.NopCloser(bytes.NewReader(frames))})
		if _, err := io.Copy(io.Discard, resp.Body); err != nil {
			b.Fatal(err)
		}
	}
}

// TestBedrockUnsupportedParams: what Converse cannot express is refused
// naming the parameter (docs/providers/bedrock.md's list), or, with
// drop_params, dropped and listed; an image by URL is refused either way.
func TestBedrockUnsupportedParams(t *testing.T) {
	for i, tc := range []struct {
		client, body, param string
	}{
		{Chat, `{"model":"m","n":2,"messages":[{"role":"user","content":"hi"}]}`, "n"},
		{Chat, `{"model":"m","logprobs":true,"messages":[{"role":"user","content":"hi"}]}`, "logprobs"},
		{Chat, `{"model":"m","presence_penalty":0.5,"messages":[{"role":"user","content":"hi"}]}`, "presence_penalty"},
		{Chat, `{"model":"m","response_format":{"type":"json_object"},"messages":[{"role":"user","content":"hi"}]}`, "response_format"},
		{Chat, `{"model":"m","parallel_tool_calls":false,"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}],"messages":[{"role":"user","content":"hi"}]}`, "parallel_tool_calls"},
		{Messages, `{"model":"m","max_tokens":10,"tool_choice":{"type":"none"},"tools":[{"name":"f","input_schema":{"type":"object"}}],"messages":[{"role":"user","content":"hi"},` +
			`{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"f","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"ok"}]}]}`, "tool_choice"},
	} {
		x, err := For(tc.client, Bedrock).Request([]byte(tc.body), Options{})
		if err == nil {
			_, err = x.Body("m")
		}
		var ue *UnsupportedError
		if !errors.As(err, &ue) || ue.Param != tc.param {
			t.Errorf("Test %d: error %v, want %s unsupported", i, err, tc.param)
		}
		x, err = For(tc.client, Bedrock).Request([]byte(tc.body), Options{DropParams: true})
		if err == nil {
			_, err = x.Body("m")
		}
		if err != nil {
			t.Errorf("Test %d: with drop_params: %v", i, err)
		}
	}
	_, err := For(Chat, Bedrock).Request([]byte(`{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"https://example.com/a.png"}}]}]}`), Options{DropParams: true})
	if err == nil || !strings.Contains(err.Error(), "not by url") {
		t.Errorf("an image by URL: %v", err)
	}
}
