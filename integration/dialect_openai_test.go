package integration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"
	"github.com/tidwall/gjson"
)

// openAIClient is the official OpenAI SDK pointed at the gateway.
func openAIClient(key string) openai.Client {
	return openai.NewClient(option.WithBaseURL(baseURL+"/v1/"), option.WithAPIKey(key), option.WithMaxRetries(0))
}

var openAIWeather = openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
	Name: "get_weather",
	Parameters: shared.FunctionParameters{"type": "object", "properties": map[string]any{
		"city": map[string]any{"type": "string"}, "unit": map[string]any{"type": "string"}}},
})

// TestDialectOpenAISDKToAnthropicModel drives mock-claude, an
// Anthropic-protocol model (whose mock requires max_tokens and checks
// thinking signatures), with the OpenAI SDK through /v1/chat/completions.
func TestDialectOpenAISDKToAnthropicModel(t *testing.T) {
	startGateway(t, gatewayOptions{Prices: `{"currency":"USD","models":{"mock-claude":{"tiers":[{"input":"3","output":"15"}]}}}`})
	key, _ := createKey(t, "o2a")
	client := openAIClient(key)
	ctx := context.Background()

	// No max_tokens: the gateway sends Anthropic the default.
	r, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
		Model:    "mock-claude",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("Be terse."), openai.UserMessage("Hello GPT client")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(r.Choices[0].Message.Content, "Hello GPT client") || r.Choices[0].FinishReason != "stop" || r.Usage.PromptTokens == 0 {
		t.Fatalf("completion %+v", r)
	}

	stream := client.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{
		Model:         "mock-claude",
		Messages:      []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Weather in Oslo?")},
		Tools:         []openai.ChatCompletionToolUnionParam{openAIWeather},
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	})
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
	call := acc.Choices[0].Message.ToolCalls
	if acc.Choices[0].FinishReason != "tool_calls" || len(call) != 1 || call[0].Function.Name != "get_weather" ||
		!strings.HasPrefix(call[0].ID, "toolu_") || argDeltas < 2 || !gjson.Valid(call[0].Function.Arguments) || acc.Usage.PromptTokens == 0 {
		t.Fatalf("tool call (%d argument deltas) %+v usage %+v", argDeltas, acc.Choices[0], acc.Usage)
	}
	res, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
		Model: "mock-claude", Tools: []openai.ChatCompletionToolUnionParam{openAIWeather},
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Weather in Oslo?"), acc.Choices[0].Message.ToParam(),
			openai.ToolMessage("12 degrees and rain", call[0].ID)},
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Choices[0].FinishReason != "stop" || res.Choices[0].Message.Content == "" {
		t.Fatalf("answer after the tool result %+v", res.Choices[0])
	}

	// Thinking: reasoning_content streams, and the signed block comes in
	// thinking_blocks, which the second turn sends back.
	stream = client.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{
		Model: "mock-claude", MaxTokens: openai.Int(4096), ReasoningEffort: shared.ReasoningEffortLow,
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Think about Oslo")},
	})
	var reasoning, content, blocks string
	for stream.Next() {
		c := stream.Current()
		if len(c.Choices) == 0 {
			continue
		}
		d := gjson.Parse(c.Choices[0].Delta.RawJSON())
		reasoning += d.Get("reasoning_content").Str
		content += d.Get("content").Str
		if tb := d.Get("thinking_blocks"); tb.Exists() {
			blocks = tb.Raw
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if reasoning == "" || content == "" || gjson.Get(blocks, "0.signature").Str == "" || gjson.Get(blocks, "0.thinking").Str != reasoning {
		t.Fatalf("reasoning %q content %q blocks %s", reasoning, content, blocks)
	}
	turn := func(blocks string) (*openai.ChatCompletion, error) {
		var v any
		if err := json.Unmarshal([]byte(blocks), &v); err != nil {
			t.Fatal(err)
		}
		return client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
			Model: "mock-claude", MaxTokens: openai.Int(4096), ReasoningEffort: shared.ReasoningEffortLow,
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Think about Oslo"), openai.AssistantMessage(content),
				openai.UserMessage("And Rome?")},
		}, option.WithJSONSet("messages.1.thinking_blocks", v))
	}
	second, err := turn(blocks)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(second.Choices[0].Message.Content, "Rome") || gjson.Get(second.Choices[0].Message.RawJSON(), "thinking_blocks.0.signature").Str == "" {
		t.Fatalf("second turn %s", second.Choices[0].Message.RawJSON())
	}
	// A forged signature is the provider's 400, in OpenAI's shape.
	_, err = turn(strings.Replace(blocks, gjson.Get(blocks, "0.signature").Str, "forged", 1))
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || apiErr.Type != "invalid_request_error" || !strings.Contains(apiErr.Message, "signature") {
		t.Fatalf("forged signature: %v", err)
	}

	img, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
		Model: "mock-claude",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage([]openai.ChatCompletionContentPartUnionParam{
			openai.TextContentPart("Hello GPT client"),
			openai.ImageContentPart(openai.ChatCompletionContentPartImageImageURLParam{URL: "data:image/png;base64,iVBORw0KGgo="}),
		})},
	})
	if err != nil {
		t.Fatal(err)
	}
	if img.Usage.PromptTokens <= r.Usage.PromptTokens {
		t.Fatalf("image prompt tokens %d, without %d", img.Usage.PromptTokens, r.Usage.PromptTokens)
	}

	// Six exchanges reached the provider (the forged one answered 400);
	// the plain and image ones are priced on what the client was shown.
	recs := waitLedger(t, "o2a", 7)
	for i, tc := range []struct {
		rec   int
		usage openai.CompletionUsage
	}{{0, r.Usage}, {6, img.Usage}} {
		rec := recs[tc.rec]
		if rec.Usage.Input+rec.Usage.CacheRead+rec.Usage.CacheCreation != tc.usage.PromptTokens || rec.Usage.Output != tc.usage.CompletionTokens || rec.Endpoint != "chat" {
			t.Errorf("Test %d: record %+v, client shown %+v", i, rec, tc.usage)
		}
		want := new(big.Rat).SetFrac64(tc.usage.PromptTokens*3+tc.usage.CompletionTokens*15, 1_000_000)
		if got, ok := new(big.Rat).SetString(rec.Cost); !ok || got.Cmp(want) != 0 {
			t.Errorf("Test %d: cost %s, want %s", i, rec.Cost, want.FloatString(9))
		}
	}
}

// failingMessages is an Anthropic-protocol upstream that fails by the
// first user message: "429", "529" (overloaded), "cut".
func failingMessages(t *testing.T) *upstream {
	return newUpstream(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
		switch gjson.GetBytes(body, "messages.0.content.0.text").Str {
		case "429":
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Retry-After", "9")
			w.WriteHeader(http.StatusTooManyRequests)
			_, _ = io.WriteString(w, `{"type":"error","error":{"type":"rate_limit_error","message":"Number of requests has exceeded your rate limit"}}`)
		case "529":
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(529)
			_, _ = io.WriteString(w, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)
		case "cut":
			sseWrite(w, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"c\",\"content\":[],\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":5,\"output_tokens\":1}}}\n\n",
				"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
				"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hel\"}}\n\n")
		}
	})
}

// TestDialectOpenAISDKErrors: 429, overload and a cut stream of an
// Anthropic-protocol provider reach an OpenAI client in OpenAI's shape.
func TestDialectOpenAISDKErrors(t *testing.T) {
	up, up2 := failingMessages(t), failingMessages(t)
	startGateway(t, gatewayOptions{
		Providers: providerBlock("rec-anth", "anthropic", "retries 0", up) + "\n" + providerBlock("rec-anth2", "anthropic", "retries 0", up2),
		Models:    "model rec-claude rec-anth\nmodel rec-claude2 rec-anth2",
	})
	key, _ := createKey(t, "o2a-errors")
	for i, tc := range []struct {
		model, prompt string
		status        int
		errType       string
		retryAfter    string
	}{
		{"rec-claude", "429", 429, "rate_limit_error", "9"},
		{"rec-claude2", "529", 529, "server_error", ""},
	} {
		status, hdr, body := call(t, http.MethodPost, "/v1/chat/completions", key,
			fmt.Sprintf(`{"model":%q,"messages":[{"role":"user","content":[{"type":"text","text":%q}]}]}`, tc.model, tc.prompt))
		if status != tc.status || gjson.GetBytes(body, "error.type").Str != tc.errType || gjson.GetBytes(body, "error.message").Str == "" ||
			hdr.Get("Retry-After") != tc.retryAfter {
			t.Errorf("Test %d: %d %v %s", i, status, hdr, body)
		}
	}
	client := openAIClient(key)
	stream := client.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{Model: "rec-claude2",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage([]openai.ChatCompletionContentPartUnionParam{openai.TextContentPart("cut")})}})
	var text string
	for stream.Next() {
		if c := stream.Current(); len(c.Choices) > 0 {
			text += c.Choices[0].Delta.Content
		}
	}
	if stream.Err() == nil || text != "Hel" {
		t.Fatalf("cut stream: text %q, error %v", text, stream.Err())
	}
	waitLedger(t, "o2a-errors", 3)
}
