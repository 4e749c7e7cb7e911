package integration

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/tidwall/gjson"
)

// azureProviders reach the mock's Azure front on the deployment path
// (api-version checked) and the v1 path, and with a wrong key.
const azureProviders = `provider az {
			protocol azure
			endpoint http://localhost:9080/mock/azure/openai/
			api_key mock-azure-key
			api_version 2025-04-01-preview
			retries 0
			min_requests 1000
		}
		provider az-v1 {
			protocol azure
			endpoint http://localhost:9080/mock/azure
			api_key mock-azure-key
			api_version v1
		}
		provider az-wrong-key {
			protocol azure
			endpoint http://localhost:9080/mock/azure
			api_key not-the-key
			retries 0
		}`

// azureModels name a deployment on each.
const azureModels = `model gpt-azure az gpt-4o-prod
		model gpt-azure-v1 az-v1 gpt-4o-prod
		model gpt-azure-wrong-key az-wrong-key gpt-4o-prod`

// TestDialectAzureOpenAISDK drives azure models with the OpenAI SDK (a
// plain answer on both paths, a stream, a streamed tool call and its
// result's turn, an image) and the Anthropic SDK (a plain answer, a
// stream, a streamed tool call and its result's turn), with the exact
// cost of each exchange.
func TestDialectAzureOpenAISDK(t *testing.T) {
	startGateway(t, gatewayOptions{MockOptions: bedrockMock, Providers: azureProviders, Models: azureModels,
		Prices: `{"currency":"USD","models":{"gpt-azure*":{"tiers":[{"input":"2.5","output":"10"}]}}}`})
	key, _ := createKey(t, "azure")
	client := openAIClient(key)
	ctx := context.Background()

	var usages []openai.CompletionUsage
	for _, model := range []string{"gpt-azure", "gpt-azure-v1"} {
		r, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: model,
			Messages: []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("Be terse."), openai.UserMessage("Hello Azure")}})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(r.Choices[0].Message.Content, "Hello Azure") || r.Choices[0].FinishReason != "stop" || r.Usage.PromptTokens == 0 {
			t.Fatalf("%s: completion %+v", model, r)
		}
		usages = append(usages, r.Usage)
	}

	stream := client.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{Model: "gpt-azure",
		Messages:      []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Weather in Oslo?")},
		Tools:         []openai.ChatCompletionToolUnionParam{openAIWeather},
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}})
	acc := openai.ChatCompletionAccumulator{}
	argDeltas := 0
	for stream.Next() {
		c := stream.Current()
		if len(c.Choices) > 0 && len(c.Choices[0].Delta.ToolCalls) > 0 && c.Choices[0].Delta.ToolCalls[0].Function.Arguments != "" {
			argDeltas++
		}
		acc.AddChunk(c)
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	calls := acc.Choices[0].Message.ToolCalls
	if acc.Choices[0].FinishReason != "tool_calls" || len(calls) != 1 || calls[0].Function.Name != "get_weather" || argDeltas < 2 ||
		!gjson.Valid(calls[0].Function.Arguments) || acc.Usage.PromptTokens == 0 {
		t.Fatalf("tool call (%d argument deltas) %+v", argDeltas, acc.Choices[0])
	}
	usages = append(usages, acc.Usage)
	res, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "gpt-azure",
		Tools: []openai.ChatCompletionToolUnionParam{openAIWeather},
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Weather in Oslo?"), acc.Choices[0].Message.ToParam(),
			openai.ToolMessage("12 degrees and rain", calls[0].ID)}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Choices[0].FinishReason != "stop" || res.Choices[0].Message.Content == "" {
		t.Fatalf("answer after the tool result %+v", res.Choices[0])
	}
	usages = append(usages, res.Usage)
	img, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "gpt-azure",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage([]openai.ChatCompletionContentPartUnionParam{
			openai.TextContentPart("Hello Azure"),
			openai.ImageContentPart(openai.ChatCompletionContentPartImageImageURLParam{URL: "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="}),
		})}})
	if err != nil {
		t.Fatal(err)
	}
	if img.Usage.PromptTokens <= usages[0].PromptTokens-5 || img.Choices[0].Message.Content == "" {
		t.Fatalf("image answer %+v, prompt tokens %d", img.Choices[0], img.Usage.PromptTokens)
	}
	usages = append(usages, img.Usage)

	// The Anthropic SDK: translated to Chat Completions for Azure.
	aclient := anthropicClient(key)
	m, err := aclient.Messages.New(ctx, anthropic.MessageNewParams{Model: "gpt-azure", MaxTokens: 256,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Hello Claude client"))}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(m.Content[0].Text, "Hello Claude client") || m.StopReason != anthropic.StopReasonEndTurn || m.Usage.InputTokens == 0 {
		t.Fatalf("message %+v", m)
	}
	q := anthropic.NewUserMessage(anthropic.NewTextBlock("Weather in Oslo?"))
	astream := aclient.Messages.NewStreaming(ctx, anthropic.MessageNewParams{Model: "gpt-azure-v1", MaxTokens: 256,
		Tools: []anthropic.ToolUnionParam{weatherTool}, Messages: []anthropic.MessageParam{q}})
	var tool anthropic.Message
	deltas := 0
	for astream.Next() {
		ev := astream.Current()
		if ev.Type == "content_block_delta" && ev.Delta.Type == "input_json_delta" {
			deltas++
		}
		if err := tool.Accumulate(ev); err != nil {
			t.Fatal(err)
		}
	}
	if err := astream.Err(); err != nil {
		t.Fatal(err)
	}
	if tool.StopReason != anthropic.StopReasonToolUse || len(tool.Content) != 1 || tool.Content[0].Name != "get_weather" || deltas < 2 {
		t.Fatalf("tool call (%d deltas) %+v", deltas, tool)
	}
	after, err := aclient.Messages.New(ctx, anthropic.MessageNewParams{Model: "gpt-azure-v1", MaxTokens: 256,
		Tools: []anthropic.ToolUnionParam{weatherTool}, Messages: []anthropic.MessageParam{q, tool.ToParam(),
			anthropic.NewUserMessage(anthropic.NewToolResultBlock(tool.Content[0].ID, "12 degrees and rain", false))}})
	if err != nil {
		t.Fatal(err)
	}
	if after.StopReason != anthropic.StopReasonEndTurn || after.Content[0].Type != "text" {
		t.Fatalf("answer after the tool result %+v", after)
	}

	// One record per exchange; the chat ones priced on what the client
	// was shown, exactly.
	recs := waitLedger(t, "azure", 8)
	for i, u := range usages {
		r := recs[i]
		if r.Usage.Input+r.Usage.CacheRead != u.PromptTokens || r.Usage.Output != u.CompletionTokens || r.Endpoint != "chat" || r.Outcome != "ok" {
			t.Errorf("Test %d: record %+v, client shown %+v", i, r, u)
		}
		want := new(big.Rat).SetFrac64(u.PromptTokens*25+u.CompletionTokens*100, 10_000_000)
		if got, ok := new(big.Rat).SetString(r.Cost); !ok || got.Cmp(want) != 0 {
			t.Errorf("Test %d: cost %s, want %s", i, r.Cost, want.FloatString(9))
		}
	}
	for i, r := range recs[5:] {
		if r.Endpoint != "messages" || r.Outcome != "ok" || (r.Provider != "az" && r.Provider != "az-v1") || !r.Priced {
			t.Errorf("Test %d: record %+v", i, r)
		}
	}
}

// azureRecorder is an Azure resource that records what reaches it and
// answers with fixed bytes: a chat completion, a stream with usage, or,
// for the prompt "cut", a stream broken off after two chunks.
type azureRecorder struct {
	*httptest.Server
	mu   sync.Mutex
	seen []azureSeen
}

// azureSeen is one request that reached the recorder.
type azureSeen struct {
	uri, apiKey, auth string
	body              []byte
}

const (
	azureAnswer = `{"id":"chatcmpl-az1","object":"chat.completion","created":1,"model":"gpt-4o-2024-11-20","choices":[{"index":0,"message":{"role":"assistant","content":"Hi from Azure","refusal":null},"finish_reason":"stop","content_filter_results":{"hate":{"filtered":false,"severity":"safe"}}}],"usage":{"prompt_tokens":11,"completion_tokens":4,"total_tokens":15},"prompt_filter_results":[{"prompt_index":0,"content_filter_results":{}}]}`
	azureStream = "data: {\"choices\":[],\"created\":0,\"id\":\"\",\"model\":\"\",\"object\":\"\",\"prompt_filter_results\":[{\"prompt_index\":0,\"content_filter_results\":{}}]}\n\n" +
		"data: {\"id\":\"chatcmpl-az2\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-4o-2024-11-20\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"Hi\"},\"finish_reason\":null}],\"usage\":null}\n\n" +
		"data: {\"id\":\"chatcmpl-az2\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-4o-2024-11-20\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}],\"usage\":null}\n\n" +
		"data: {\"id\":\"chatcmpl-az2\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-4o-2024-11-20\",\"choices\":[],\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":1,\"total_tokens\":10}}\n\n" +
		"data: [DONE]\n\n"
)

func newAzureRecorder(t *testing.T) *azureRecorder {
	a := &azureRecorder{}
	a.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		a.mu.Lock()
		a.seen = append(a.seen, azureSeen{uri: r.URL.RequestURI(), apiKey: r.Header.Get("Api-Key"), auth: r.Header.Get("Authorization"), body: body})
		a.mu.Unlock()
		prompt := gjson.GetBytes(body, "messages.0.content").Str
		if prompt == "" { // content parts (a translated Responses request)
			prompt = gjson.GetBytes(body, "messages.0.content.0.text").Str
		}
		switch {
		case prompt == "429":
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Retry-After", "7")
			w.WriteHeader(http.StatusTooManyRequests)
			_, _ = io.WriteString(w, `{"error":{"code":"429","message":"Requests to the ChatCompletions_Create Operation under Azure OpenAI API version 2025-04-01-preview have exceeded token rate limit of your current tier."}}`)
		case prompt == "500":
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusInternalServerError)
			_, _ = io.WriteString(w, `{"error":{"code":"InternalServerError","message":"The server had an error while processing your request."}}`)
		case prompt == "cut":
			sseWrite(w, "data: {\"id\":\"chatcmpl-az3\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-4o\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"Hel\"},\"finish_reason\":null}]}\n\n")
		case gjson.GetBytes(body, "stream").Bool():
			sseWrite(w, azureStream)
		default:
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, azureAnswer)
		}
	}))
	t.Cleanup(a.Close)
	return a
}

// TestDialectAzurePassThrough: a chat client's request reaches Azure as
// it sent it (only the model, the deployment's name, changes), on the
// deployment path with its api-version and the key in api-key (no bearer
// key); the answer and the stream reach it byte for byte. A Messages
// client is translated; a stream cut, a 5xx and a 429 reach both
// clients as their own errors, each exchange with one ledger record.
func TestDialectAzurePassThrough(t *testing.T) {
	az := newAzureRecorder(t)
	startGateway(t, gatewayOptions{MockOptions: bedrockMock,
		Providers: fmt.Sprintf("provider az-rec {\n\t\t\tprotocol azure\n\t\t\tendpoint %s\n\t\t\tapi_key az-secret\n\t\t\tapi_version 2025-04-01-preview\n\t\t\tretries 0\n\t\t\tmin_requests 1000\n\t\t}", az.URL),
		Models:    "model gpt-az az-rec gpt-4o-prod"})
	key, _ := createKey(t, "azure-pass")
	sent := `{"model":"gpt-az",  "messages":[{"role":"user","content":"Hello"}],"temperature":0.2,"user":"u-1","x_vendor":{"a":[1,2]}}`
	status, _, body := call(t, http.MethodPost, "/v1/chat/completions", key, sent)
	if status != 200 || string(body) != azureAnswer {
		t.Fatalf("answer %d:\n%s\nwant\n%s", status, body, azureAnswer)
	}
	sentStream := `{"model":"gpt-az","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"Hello"}]}`
	status, _, body = call(t, http.MethodPost, "/v1/chat/completions", key, sentStream)
	if status != 200 || string(body) != azureStream {
		t.Fatalf("stream %d:\n%s\nwant\n%s", status, body, azureStream)
	}
	az.mu.Lock()
	seen := append([]azureSeen(nil), az.seen...)
	az.mu.Unlock()
	for i, want := range []string{sent, sentStream} {
		s := seen[i]
		if s.uri != "/openai/deployments/gpt-4o-prod/chat/completions?api-version=2025-04-01-preview" || s.apiKey != "az-secret" || s.auth != "" {
			t.Errorf("Test %d: %s api-key %q authorization %q", i, s.uri, s.apiKey, s.auth)
		}
		if w := strings.Replace(want, `"gpt-az"`, `"gpt-4o-prod"`, 1); string(s.body) != w {
			t.Errorf("Test %d: Azure got\n%s\nwant\n%s", i, s.body, w)
		}
	}

	// A Messages client, translated.
	aclient := anthropicClient(key)
	m, err := aclient.Messages.New(context.Background(), anthropic.MessageNewParams{Model: "gpt-az", MaxTokens: 100,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Hello"))}})
	if err != nil {
		t.Fatal(err)
	}
	if m.Content[0].Text != "Hi from Azure" || m.Usage.InputTokens != 11 || m.Usage.OutputTokens != 4 {
		t.Fatalf("message %+v", m)
	}

	// A cut stream: each client's own error event.
	status, _, body = call(t, http.MethodPost, "/v1/messages", key, `{"model":"gpt-az","max_tokens":10,"stream":true,"messages":[{"role":"user","content":"cut"}]}`,
		"anthropic-version", "2023-06-01")
	if status != 200 || !strings.Contains(string(body), "event: error\ndata: {\"type\":\"error\"") || strings.Contains(string(body), "message_stop") {
		t.Fatalf("cut stream (messages) %d:\n%s", status, body)
	}
	oclient := openAIClient(key)
	stream := oclient.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{Model: "gpt-az",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("cut")}})
	text := ""
	for stream.Next() {
		if c := stream.Current(); len(c.Choices) > 0 {
			text += c.Choices[0].Delta.Content
		}
	}
	if stream.Err() == nil || text != "Hel" {
		t.Fatalf("cut stream (chat): text %q, error %v", text, stream.Err())
	}
	// Azure's 5xx and 429 (last: the resource then cools down) in
	// Anthropic's shape, with the Retry-After.
	for i, tc := range []struct {
		prompt, errType, retryAfter string
		status                      int
	}{{"500", "api_error", "", 500}, {"429", "rate_limit_error", "7", 429}} {
		status, hdr, body := call(t, http.MethodPost, "/v1/messages", key, fmt.Sprintf(`{"model":"gpt-az","max_tokens":10,"messages":[{"role":"user","content":%q}]}`, tc.prompt),
			"anthropic-version", "2023-06-01")
		if status != tc.status || gjson.GetBytes(body, "error.type").Str != tc.errType || gjson.GetBytes(body, "error.message").Str == "" || hdr.Get("Retry-After") != tc.retryAfter {
			t.Errorf("Test %d: %d %v %s", i, status, hdr, body)
		}
	}
	recs := waitLedger(t, "azure-pass", 7)
	for i, want := range []struct {
		endpoint, outcome string
		input, output     int64
	}{{"chat", "ok", 11, 4}, {"chat", "ok", 9, 1}, {"messages", "ok", 11, 4}, {"messages", "upstream_error", -1, -1}, {"chat", "upstream_error", -1, -1},
		{"messages", "upstream_error", -1, -1}, {"messages", "upstream_error", -1, -1}} {
		r := recs[i]
		if r.Endpoint != want.endpoint || r.Outcome != want.outcome || r.Provider != "az-rec" || (want.input >= 0 && (r.Usage.Input != want.input || r.Usage.Output != want.output)) {
			t.Errorf("Test %d: record %+v", i, r)
		}
	}
}

// TestDialectAzureErrors: the mock Azure's 429 (with its Retry-After)
// and 5xx, and a key the resource refuses, reach a chat client in its
// shape (TestDialectAzurePassThrough has a Messages client's).
func TestDialectAzureErrors(t *testing.T) {
	startGateway(t, gatewayOptions{MockOptions: bedrockMock, Providers: azureProviders, Models: azureModels})
	key, _ := createKey(t, "azure-errors")
	oclient := openAIClient(key)
	_, err := oclient.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "gpt-azure-wrong-key",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hello")}})
	// The resource's 401 takes the key out of rotation (as any provider's
	// does), and the request, with no other key, is the gateway's 503.
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 503 {
		t.Fatalf("wrong key: %v", err)
	}
	_, err = oclient.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "gpt-azure",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hello")}}, option.WithJSONSet("mock_status", 500))
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 500 {
		t.Fatalf("500: %v", err)
	}
	status, hdr, body := call(t, http.MethodPost, "/v1/chat/completions", key, `{"model":"gpt-azure","mock_status":429,"messages":[{"role":"user","content":"Hello"}]}`)
	if status != 429 || hdr.Get("Retry-After") != "1" || gjson.GetBytes(body, "error.message").Str == "" {
		t.Fatalf("429: %d %v %s", status, hdr, body)
	}
	recs := waitLedger(t, "azure-errors", 3)
	for i, want := range []struct {
		outcome string
		status  int
	}{{"unavailable", 503}, {"upstream_error", 500}, {"upstream_error", 429}} {
		if r := recs[i]; r.Outcome != want.outcome || r.Status != want.status {
			t.Errorf("Test %d: record %+v", i, r)
		}
	}
}
