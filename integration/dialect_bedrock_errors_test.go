package integration

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/openai/openai-go/v3"
	"github.com/tidwall/gjson"

	"github.com/caddy-air/caddy-air/dialect/bedrock"
)

// TestDialectBedrockErrors: Bedrock's 5xx, a stream cut between frames
// and inside one, an exception frame, a request the fake refuses for its
// signature, and a throttling 429 with its Retry-After each reach the
// client as its own protocol's error, promptly, with one ledger record
// per exchange.
func TestDialectBedrockErrors(t *testing.T) {
	// A provider of its own for the chat client's 429, as the first 429
	// cools its provider down.
	throttled := "provider aws-throttled {\n\t\t\tprotocol bedrock\n\t\t\tregion us-east-1\n\t\t\tbase_url http://localhost:9080/mock/bedrock\n" +
		"\t\t\taccess_key_id AKIDMOCKBEDROCK\n\t\t\tsecret_access_key mock-bedrock-secret\n\t\t\tretries 0\n\t\t}"
	startGateway(t, gatewayOptions{MockOptions: bedrockMock, Providers: bedrockProviders + "\n\t\t" + throttled,
		Models: bedrockModels + "\n\t\tmodel claude-throttled aws-throttled anthropic.claude-3-7-sonnet-20250219-v1:0", Prices: bedrockPrices})
	key, _ := createKey(t, "bedrock-errors")
	messages := func(model, prompt string, stream bool) (int, http.Header, []byte) {
		return call(t, http.MethodPost, "/v1/messages", key, fmt.Sprintf(`{"model":%q,"max_tokens":100,"stream":%t,"messages":[{"role":"user","content":%q}]}`,
			model, stream, prompt), "anthropic-version", "2023-06-01")
	}
	chat := func(model, prompt string, stream bool) (int, http.Header, []byte) {
		return call(t, http.MethodPost, "/v1/chat/completions", key, fmt.Sprintf(`{"model":%q,"stream":%t,"messages":[{"role":"user","content":%q}]}`,
			model, stream, prompt))
	}
	for i, tc := range []struct {
		client  func(model, prompt string, stream bool) (int, http.Header, []byte)
		model   string
		prompt  string
		status  int
		errType string // error.type in the client's shape
		message string // in error.message
	}{
		{messages, "claude-bedrock-errors", "mock:500", 500, "api_error", "internal error"},
		{chat, "claude-bedrock-errors", "mock:503", 503, "server_error", "unavailable"},
		{messages, "claude-bedrock-forged", "Hello", 403, "authentication_error", "signature"},
		{chat, "claude-bedrock-forged", "Hello", 403, "authentication_error", "signature"},
	} {
		status, _, body := tc.client(tc.model, tc.prompt, false)
		if status != tc.status || gjson.GetBytes(body, "error.type").Str != tc.errType || !strings.Contains(gjson.GetBytes(body, "error.message").Str, tc.message) {
			t.Errorf("Test %d: %d %s", i, status, body)
		}
	}
	// Streams that break: the client's own error event, after what was
	// streamed, and no end.
	for i, prompt := range []string{"mock:cut-between", "mock:cut-frame", "mock:exception"} {
		status, _, body := messages("claude-bedrock-errors", prompt, true)
		if status != 200 || !strings.Contains(string(body), "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":") ||
			strings.Contains(string(body), "message_stop") || !strings.Contains(string(body), "text_delta") {
			t.Errorf("Test %d (messages): %d\n%s", i, status, body)
		}
		status, _, body = chat("claude-bedrock-errors", prompt, true)
		if status != 200 || !strings.Contains(string(body), `data: {"error":{`) || strings.Contains(string(body), "[DONE]") ||
			!strings.Contains(string(body), `"content":"`) {
			t.Errorf("Test %d (chat): %d\n%s", i, status, body)
		}
	}
	// The SDKs see an error, not a clean end.
	client := anthropicClient(key)
	stream := client.Messages.NewStreaming(context.Background(), anthropic.MessageNewParams{Model: "claude-bedrock-errors", MaxTokens: 10,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("mock:cut-between"))}})
	for stream.Next() {
	}
	if stream.Err() == nil {
		t.Error("the Anthropic SDK saw a cut stream end cleanly")
	}
	oclient := openAIClient(key)
	ostream := oclient.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{Model: "claude-bedrock-errors",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("mock:cut-frame")}})
	for ostream.Next() {
	}
	if ostream.Err() == nil {
		t.Error("the OpenAI SDK saw a cut stream end cleanly")
	}
	// Last, as it cools the provider down: the throttling 429 and its
	// Retry-After.
	status, hdr, body := messages("claude-bedrock-errors", "mock:throttle", false)
	if status != 429 || gjson.GetBytes(body, "error.type").Str != "rate_limit_error" || hdr.Get("Retry-After") != "7" {
		t.Errorf("throttled (messages): %d %v %s", status, hdr, body)
	}
	// The provider cools down for the Retry-After: the gateway's own 503,
	// in OpenAI's shape, with no exchange.
	_, err := oclient.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "claude-bedrock-errors",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("mock:throttle")}})
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 503 || apiErr.Response.Header.Get("Retry-After") == "" {
		t.Errorf("throttled (chat): %v", err)
	}
	// The same throttling in OpenAI's shape, with its Retry-After.
	status, hdr, body = chat("claude-throttled", "mock:throttle", false)
	if status != 429 || gjson.GetBytes(body, "error.message").Str == "" || hdr.Get("Retry-After") != "7" {
		t.Errorf("throttled (chat): %d %v %s", status, hdr, body)
	}
	// 4 failed answers, 6 broken streams, 2 by the SDKs and the two 429s.
	recs := waitLedger(t, "bedrock-errors", 14)
	for i, r := range recs {
		if r.Outcome != "upstream_error" {
			t.Errorf("Test %d: record %+v", i, r)
		}
	}
	// A broken stream is billed on what was streamed.
	for i := 4; i < 10; i++ {
		if recs[i].Usage.Input == 0 {
			t.Errorf("Test %d: cut stream record %+v", i, recs[i])
		}
	}
}

// TestDialectBedrockManyStreams: 50 ConverseStreams in a row through one
// provider all end complete, each with its ledger record (a trial of the
// SDK's bedrockruntime client against a faithful fake failed one in three
// with "use of closed network connection").
func TestDialectBedrockManyStreams(t *testing.T) {
	startBedrock(t)
	key, _ := createKey(t, "bedrock-many")
	client := anthropicClient(key)
	const n = 50
	for i := range n {
		prompt := fmt.Sprintf("Stream number %d", i)
		stream := client.Messages.NewStreaming(context.Background(), anthropic.MessageNewParams{Model: "claude-bedrock", MaxTokens: 100,
			Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(prompt))}})
		var m anthropic.Message
		for stream.Next() {
			if err := m.Accumulate(stream.Current()); err != nil {
				t.Fatal(err)
			}
		}
		if err := stream.Err(); err != nil {
			t.Fatalf("stream %d: %v", i, err)
		}
		if len(m.Content) != 1 || m.Content[0].Text != "Mock reply to: "+prompt || m.StopReason != anthropic.StopReasonEndTurn || m.Usage.OutputTokens == 0 {
			t.Fatalf("stream %d: %+v", i, m)
		}
	}
	recs := waitLedger(t, "bedrock-many", n)
	for i, r := range recs {
		if r.Outcome != "ok" || r.Usage.Output == 0 {
			t.Errorf("Test %d: record %+v", i, r)
		}
	}
}

// TestDialectBedrockDefaultChain: a bedrock provider without keys signs
// with the AWS SDK's default credential chain (here the environment); when
// the chain finds none, the request fails promptly with a 503, never
// unsigned.
func TestDialectBedrockDefaultChain(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("AWS_CONFIG_FILE", dir+"/none")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", dir+"/none")
	t.Setenv("AWS_PROFILE", "")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDMOCKBEDROCK")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "mock-bedrock-secret")
	chain := "provider aws-chain {\n\t\t\tprotocol bedrock\n\t\t\tregion us-east-1\n\t\t\tbase_url http://localhost:9080/mock/bedrock\n\t\t\tretries 0\n\t\t}"
	o := gatewayOptions{MockOptions: bedrockMock, Providers: chain, Models: "model claude-chain aws-chain anthropic.claude-3-7-sonnet-20250219-v1:0"}
	g := startGateway(t, o)
	key, _ := createKey(t, "bedrock-chain")
	body := `{"model":"claude-chain","max_tokens":100,"messages":[{"role":"user","content":"Hello chain"}]}`
	status, hdr, out := call(t, http.MethodPost, "/v1/messages", key, body, "anthropic-version", "2023-06-01")
	if status != 200 || gjson.GetBytes(out, "content.0.text").Str != "Mock reply to: Hello chain" {
		t.Fatalf("signed by the environment's keys: %d %s", status, out)
	}
	// Bedrock's request id reaches the client as the provider's, and names
	// the message.
	if id := hdr.Get("X-Upstream-Request-Id"); len(id) != 32 || gjson.GetBytes(out, "id").Str != "msg_"+id {
		t.Errorf("upstream request id %q, message id %s", id, gjson.GetBytes(out, "id").Str)
	}
	t.Setenv("AWS_ACCESS_KEY_ID", "")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "")
	o.Providers = strings.Replace(chain, "retries 0", "retries 1", 1) // a changed config: Caddy skips loading an identical one
	g.reload(o)
	status, _, out = call(t, http.MethodPost, "/v1/messages", key, body, "anthropic-version", "2023-06-01")
	// The attempt fails as a refused connection does (the log names the
	// cause): retried, then the gateway's 503.
	if status != 503 || gjson.GetBytes(out, "error.type").Str != "overloaded_error" {
		t.Fatalf("no credentials: %d %s", status, out)
	}
}

// TestDialectBedrockRetrySignsAgain: an attempt that fails (a 503 from
// the first base URL) is retried on the next one with a request signed
// anew, for that host: the first server checks the signature it got (a
// second fake with the same keys), the mock's fake the retry's.
func TestDialectBedrockRetrySignsAgain(t *testing.T) {
	fake := &bedrock.Server{Region: "us-east-1", AccessKeyID: "AKIDMOCKBEDROCK", SecretKey: "mock-bedrock-secret"}
	var hits, signed atomic.Int64
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		rec := httptest.NewRecorder()
		fake.ServeHTTP(rec, r)
		if rec.Code == http.StatusOK {
			signed.Add(1)
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Amzn-Errortype", "ServiceUnavailableException:http://internal.amazon.com/coral/com.amazon.bedrock/")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = io.WriteString(w, `{"message":"The service is currently unavailable."}`)
	}))
	defer failing.Close()
	prov := "provider aws-two {\n\t\t\tprotocol bedrock\n\t\t\tregion us-east-1\n\t\t\tbase_url " + failing.URL + " http://localhost:9080/mock/bedrock\n" +
		"\t\t\taccess_key_id AKIDMOCKBEDROCK\n\t\t\tsecret_access_key mock-bedrock-secret\n\t\t\tretries 1\n\t\t\tmin_requests 1000\n\t\t}"
	startGateway(t, gatewayOptions{MockOptions: bedrockMock, Providers: prov, Models: "model claude-two aws-two anthropic.claude-3-7-sonnet-20250219-v1:0"})
	key, _ := createKey(t, "bedrock-retry")
	for i := range 4 {
		prompt := fmt.Sprintf("Retry %d", i)
		status, _, out := call(t, http.MethodPost, "/v1/messages", key,
			fmt.Sprintf(`{"model":"claude-two","max_tokens":100,"stream":%t,"messages":[{"role":"user","content":%q}]}`, i%2 == 1, prompt), "anthropic-version", "2023-06-01")
		whole := i%2 == 0 && gjson.GetBytes(out, "content.0.text").Str == "Mock reply to: "+prompt
		streamed := i%2 == 1 && strings.Contains(string(out), `"stop_reason":"end_turn"`) && strings.HasSuffix(string(out), "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
		if status != 200 || !whole && !streamed {
			t.Fatalf("Test %d: %d %s", i, status, out)
		}
	}
	// The base URLs are taken in turn: half the requests tried the failing
	// one first, each signed for it.
	if hits.Load() < 1 || signed.Load() != hits.Load() {
		t.Fatalf("the failing base URL got %d requests, %d of them validly signed", hits.Load(), signed.Load())
	}
	recs := waitLedger(t, "bedrock-retry", 4)
	for i, r := range recs {
		if r.Outcome != "ok" || r.Usage.Output == 0 {
			t.Errorf("Test %d: record %+v", i, r)
		}
	}
}
