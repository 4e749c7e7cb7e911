package integration

import (
	"context"
	"fmt"
	"math/big"
	"net/http"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"
	"github.com/tidwall/gjson"
)

// bedrockMock mounts the mock's fake Bedrock (which recomputes every
// request's SigV4 signature with its own copy of the secret) and its
// Azure front.
const bedrockMock = `bedrock {
				region us-east-1
				access_key_id AKIDMOCKBEDROCK
				secret_access_key mock-bedrock-secret
				retry_after 7s
			}
			azure_key mock-azure-key`

// bedrockProviders are a bedrock provider signing with the fake's keys,
// another whose breaker the errors test does not open (its state
// outlives the config), and one whose secret is wrong.
const bedrockProviders = `provider aws {
			protocol bedrock
			region us-east-1
			base_url http://localhost:9080/mock/bedrock
			access_key_id AKIDMOCKBEDROCK
			secret_access_key mock-bedrock-secret
			retries 0
		}
		provider aws-errors {
			protocol bedrock
			region us-east-1
			base_url http://localhost:9080/mock/bedrock
			access_key_id AKIDMOCKBEDROCK
			secret_access_key mock-bedrock-secret
			retries 0
			min_requests 1000
		}
		provider aws-forged {
			protocol bedrock
			region us-east-1
			base_url http://localhost:9080/mock/bedrock
			access_key_id AKIDMOCKBEDROCK
			secret_access_key not-the-secret
			retries 0
		}`

// bedrockModels serve a Claude model id on each.
const bedrockModels = `model claude-bedrock aws anthropic.claude-3-7-sonnet-20250219-v1:0
		model claude-bedrock-errors aws-errors anthropic.claude-3-7-sonnet-20250219-v1:0
		model claude-bedrock-forged aws-forged anthropic.claude-3-7-sonnet-20250219-v1:0`

// bedrockPrices prices claude-bedrock with cache writes at 1.25× and
// reads at 0.1× the input price.
const bedrockPrices = `{"currency":"USD","models":{"claude-bedrock":{"tiers":[{"input":"3","output":"15"}],"cache":{"creation":"1.25","read":"0.1"}}}}`

// startBedrock starts a gateway with the bedrock providers.
func startBedrock(t *testing.T) {
	startGateway(t, gatewayOptions{MockOptions: bedrockMock, Providers: bedrockProviders, Models: bedrockModels, Prices: bedrockPrices})
}

// bedrockCost is what claude-bedrock's price says usage costs, exactly:
// (input×3 + cache writes×3×1.25 + cache reads×3×0.1 + output×15) per
// million tokens.
func bedrockCost(input, cacheWrite, cacheRead, output int64) *big.Rat {
	r := new(big.Rat).SetFrac64(input*300+cacheWrite*375+cacheRead*30+output*1500, 100_000_000)
	return r
}

// checkBedrockCost fails unless rec's cost is want.
func checkBedrockCost(t *testing.T, i int, rec ledgerRecord, want *big.Rat) {
	t.Helper()
	if got, ok := new(big.Rat).SetString(rec.Cost); !ok || got.Cmp(want) != 0 || !rec.Priced {
		t.Errorf("Test %d: cost %s (priced %t), want %s", i, rec.Cost, rec.Priced, want.FloatString(12))
	}
}

// TestDialectBedrockAnthropicSDK drives a bedrock model with the
// Anthropic SDK: a plain answer whose cached system prompt is written
// then read, a stream, a streamed tool call and its result's turn,
// thinking across two turns (the fake refuses a signature it did not
// give), an image, and the exact cost of every exchange.
func TestDialectBedrockAnthropicSDK(t *testing.T) {
	startBedrock(t)
	key, _ := createKey(t, "a2bedrock")
	client := anthropicClient(key)
	ctx := context.Background()

	system := []anthropic.TextBlockParam{{Text: "You answer questions about the weather in Norway, tersely. " + strings.Repeat("Facts. ", 40),
		CacheControl: anthropic.NewCacheControlEphemeralParam()}}
	plain := func(text string) *anthropic.Message {
		m, err := client.Messages.New(ctx, anthropic.MessageNewParams{Model: "claude-bedrock", MaxTokens: 512, System: system,
			Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(text))}})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	first, second := plain("Hello Bedrock"), plain("Hello again")
	if len(first.Content) != 1 || first.Content[0].Text != "Mock reply to: Hello Bedrock" || first.StopReason != anthropic.StopReasonEndTurn || first.Model != "claude-bedrock" {
		t.Fatalf("message %+v", first)
	}
	if first.Usage.CacheCreationInputTokens == 0 || first.Usage.CacheReadInputTokens != 0 || second.Usage.CacheReadInputTokens != first.Usage.CacheCreationInputTokens ||
		second.Usage.CacheCreationInputTokens != 0 || first.Usage.InputTokens == 0 || first.Usage.OutputTokens == 0 {
		t.Fatalf("cache usage: first %+v, second %+v", first.Usage, second.Usage)
	}

	stream := client.Messages.NewStreaming(ctx, anthropic.MessageNewParams{Model: "claude-bedrock", MaxTokens: 512,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Stream from Bedrock"))}})
	var streamed anthropic.Message
	textDeltas := 0
	for stream.Next() {
		ev := stream.Current()
		if ev.Type == "content_block_delta" {
			textDeltas++
		}
		if err := streamed.Accumulate(ev); err != nil {
			t.Fatal(err)
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if len(streamed.Content) != 1 || streamed.Content[0].Text != "Mock reply to: Stream from Bedrock" || textDeltas < 2 ||
		streamed.StopReason != anthropic.StopReasonEndTurn || streamed.Usage.InputTokens == 0 || streamed.Usage.OutputTokens == 0 {
		t.Fatalf("stream (%d deltas) %+v", textDeltas, streamed)
	}

	q := anthropic.NewUserMessage(anthropic.NewTextBlock("Weather in Oslo?"))
	stream = client.Messages.NewStreaming(ctx, anthropic.MessageNewParams{Model: "claude-bedrock", MaxTokens: 512,
		Tools: []anthropic.ToolUnionParam{weatherTool}, Messages: []anthropic.MessageParam{q}})
	var tool anthropic.Message
	argDeltas := 0
	for stream.Next() {
		ev := stream.Current()
		if ev.Type == "content_block_delta" && ev.Delta.Type == "input_json_delta" {
			argDeltas++
		}
		if err := tool.Accumulate(ev); err != nil {
			t.Fatal(err)
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if tool.StopReason != anthropic.StopReasonToolUse || len(tool.Content) != 1 || tool.Content[0].Type != "tool_use" ||
		tool.Content[0].Name != "get_weather" || !strings.HasPrefix(tool.Content[0].ID, "tooluse_") || argDeltas < 4 ||
		gjson.GetBytes(tool.Content[0].Input, "query").Str != "Weather in Oslo?" {
		t.Fatalf("tool call (%d argument deltas) %+v", argDeltas, tool)
	}
	result, err := client.Messages.New(ctx, anthropic.MessageNewParams{Model: "claude-bedrock", MaxTokens: 512,
		Tools: []anthropic.ToolUnionParam{weatherTool}, Messages: []anthropic.MessageParam{q, tool.ToParam(),
			anthropic.NewUserMessage(anthropic.NewToolResultBlock(tool.Content[0].ID, "12 degrees and rain", false))}})
	if err != nil {
		t.Fatal(err)
	}
	if result.StopReason != anthropic.StopReasonEndTurn || len(result.Content) != 1 || result.Content[0].Text != "Tool result: 12 degrees and rain" {
		t.Fatalf("answer after the tool result %+v", result)
	}

	think := anthropic.NewUserMessage(anthropic.NewTextBlock("Think about Oslo"))
	stream = client.Messages.NewStreaming(ctx, anthropic.MessageNewParams{Model: "claude-bedrock", MaxTokens: 4096,
		Thinking: anthropic.ThinkingConfigParamOfEnabled(1024), Messages: []anthropic.MessageParam{think}})
	var thought anthropic.Message
	for stream.Next() {
		if err := thought.Accumulate(stream.Current()); err != nil {
			t.Fatal(err)
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if len(thought.Content) != 2 || thought.Content[0].Type != "thinking" || thought.Content[0].Thinking != "Considering: Think about Oslo" ||
		!strings.HasPrefix(thought.Content[0].Signature, "sig-") || thought.Content[1].Type != "text" {
		t.Fatalf("first turn %+v", thought.Content)
	}
	turn2, err := client.Messages.New(ctx, anthropic.MessageNewParams{Model: "claude-bedrock", MaxTokens: 4096,
		Thinking: anthropic.ThinkingConfigParamOfEnabled(1024),
		Messages: []anthropic.MessageParam{think, thought.ToParam(), anthropic.NewUserMessage(anthropic.NewTextBlock("And Rome?"))}})
	if err != nil {
		t.Fatal(err) // the fake refuses a thinking block whose signature changed
	}
	if len(turn2.Content) != 2 || turn2.Content[0].Type != "thinking" || turn2.Content[1].Text != "Mock reply to: And Rome?" {
		t.Fatalf("second turn %+v", turn2.Content)
	}

	img, err := client.Messages.New(ctx, anthropic.MessageNewParams{Model: "claude-bedrock", MaxTokens: 256,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Hello Bedrock"),
			anthropic.NewImageBlockBase64("image/png", "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="))}})
	if err != nil {
		t.Fatal(err)
	}
	if img.Content[0].Text != "Mock reply to: Hello Bedrock" || img.Usage.InputTokens <= first.Usage.InputTokens-first.Usage.CacheCreationInputTokens {
		t.Fatalf("image answer %+v", img)
	}

	// One record per exchange, priced exactly on Bedrock's usage: cache
	// writes and reads at their own prices.
	shown := []anthropic.Usage{first.Usage, second.Usage, streamed.Usage, tool.Usage, result.Usage, thought.Usage, turn2.Usage, img.Usage}
	recs := waitLedger(t, "a2bedrock", len(shown))
	for i, r := range recs {
		u := shown[i]
		if r.Usage.Input != u.InputTokens || r.Usage.Output != u.OutputTokens || r.Usage.CacheRead != u.CacheReadInputTokens ||
			r.Usage.CacheCreation != u.CacheCreationInputTokens || r.Endpoint != "messages" || r.Provider != "aws" || r.Outcome != "ok" || r.Source != "reported" {
			t.Errorf("Test %d: record %+v, client shown %+v", i, r, u)
			continue
		}
		checkBedrockCost(t, i, r, bedrockCost(u.InputTokens, u.CacheCreationInputTokens, u.CacheReadInputTokens, u.OutputTokens))
	}
}

// TestDialectBedrockOpenAISDK drives a bedrock model with the OpenAI SDK
// through /v1/chat/completions: a plain answer, a stream with usage, a
// streamed tool call and its result's turn, reasoning across two turns
// (its signed block sent back in thinking_blocks), an image, and the
// exact cost.
func TestDialectBedrockOpenAISDK(t *testing.T) {
	startBedrock(t)
	key, _ := createKey(t, "o2bedrock")
	client := openAIClient(key)
	ctx := context.Background()

	r, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "claude-bedrock",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("Be terse."), openai.UserMessage("Hello GPT client")}})
	if err != nil {
		t.Fatal(err)
	}
	if r.Choices[0].Message.Content != "Mock reply to: Hello GPT client" || r.Choices[0].FinishReason != "stop" || r.Usage.PromptTokens == 0 || r.Model != "claude-bedrock" {
		t.Fatalf("completion %+v", r)
	}

	stream := client.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{Model: "claude-bedrock",
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
	if acc.Choices[0].FinishReason != "tool_calls" || len(calls) != 1 || calls[0].Function.Name != "get_weather" ||
		!strings.HasPrefix(calls[0].ID, "tooluse_") || argDeltas < 4 || gjson.Get(calls[0].Function.Arguments, "query").Str != "Weather in Oslo?" ||
		acc.Usage.PromptTokens == 0 || acc.Usage.CompletionTokens == 0 {
		t.Fatalf("tool call (%d argument deltas) %+v usage %+v", argDeltas, acc.Choices[0], acc.Usage)
	}
	res, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "claude-bedrock",
		Tools: []openai.ChatCompletionToolUnionParam{openAIWeather},
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Weather in Oslo?"), acc.Choices[0].Message.ToParam(),
			openai.ToolMessage("12 degrees and rain", calls[0].ID)}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Choices[0].FinishReason != "stop" || res.Choices[0].Message.Content != "Tool result: 12 degrees and rain" {
		t.Fatalf("answer after the tool result %+v", res.Choices[0])
	}

	// Reasoning: reasoning_content streams, and the signed block comes in
	// thinking_blocks, which the second turn sends back.
	stream = client.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{Model: "claude-bedrock",
		MaxTokens: openai.Int(4096), ReasoningEffort: shared.ReasoningEffortLow,
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Think about Oslo")}})
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
	if reasoning != "Considering: Think about Oslo" || content == "" || !strings.HasPrefix(gjson.Get(blocks, "0.signature").Str, "sig-") {
		t.Fatalf("reasoning %q content %q blocks %s", reasoning, content, blocks)
	}
	status, _, body := call(t, http.MethodPost, "/v1/chat/completions", key, fmt.Sprintf(
		`{"model":"claude-bedrock","max_tokens":4096,"reasoning_effort":"low","messages":[{"role":"user","content":"Think about Oslo"},`+
			`{"role":"assistant","content":%q,"thinking_blocks":%s},{"role":"user","content":"And Rome?"}]}`, content, blocks))
	if status != 200 || gjson.GetBytes(body, "choices.0.message.content").Str != "Mock reply to: And Rome?" ||
		gjson.GetBytes(body, "choices.0.message.reasoning_content").Str != "Considering: And Rome?" {
		t.Fatalf("second turn %d %s", status, body)
	}
	// A forged signature is the fake's 400, in OpenAI's shape.
	status, _, body = call(t, http.MethodPost, "/v1/chat/completions", key, fmt.Sprintf(
		`{"model":"claude-bedrock","max_tokens":4096,"reasoning_effort":"low","messages":[{"role":"user","content":"Think about Oslo"},`+
			`{"role":"assistant","content":%q,"thinking_blocks":%s},{"role":"user","content":"And Rome?"}]}`,
		content, strings.Replace(blocks, gjson.Get(blocks, "0.signature").Str, "sig-forged", 1)))
	if status != 400 || gjson.GetBytes(body, "error.type").Str != "invalid_request_error" || !strings.Contains(gjson.GetBytes(body, "error.message").Str, "signature") {
		t.Fatalf("forged signature: %d %s", status, body)
	}

	img, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "claude-bedrock",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage([]openai.ChatCompletionContentPartUnionParam{
			openai.TextContentPart("Hello GPT client"),
			openai.ImageContentPart(openai.ChatCompletionContentPartImageImageURLParam{URL: "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="}),
		})}})
	if err != nil {
		t.Fatal(err)
	}
	if img.Choices[0].Message.Content != "Mock reply to: Hello GPT client" || img.Usage.PromptTokens <= r.Usage.PromptTokens {
		t.Fatalf("image answer %+v (prompt tokens %d, without the image %d)", img.Choices[0], img.Usage.PromptTokens, r.Usage.PromptTokens)
	}

	// Seven exchanges reached the fake (the forged one answered 400); the
	// plain and image ones are priced on what the client was shown.
	recs := waitLedger(t, "o2bedrock", 7)
	for i, tc := range []struct {
		rec   int
		usage openai.CompletionUsage
	}{{0, r.Usage}, {1, acc.Usage}, {6, img.Usage}} {
		rec := recs[tc.rec]
		if rec.Usage.Input+rec.Usage.CacheRead+rec.Usage.CacheCreation != tc.usage.PromptTokens || rec.Usage.Output != tc.usage.CompletionTokens ||
			rec.Endpoint != "chat" || rec.Provider != "aws" {
			t.Errorf("Test %d: record %+v, client shown %+v", i, rec, tc.usage)
		}
		checkBedrockCost(t, i, rec, bedrockCost(rec.Usage.Input, rec.Usage.CacheCreation, rec.Usage.CacheRead, rec.Usage.Output))
		if rec.Usage.CacheRead+rec.Usage.CacheCreation == 0 {
			checkBedrockCost(t, i, rec, bedrockCost(tc.usage.PromptTokens, 0, 0, tc.usage.CompletionTokens))
		}
	}
	if recs[5].Outcome != "upstream_error" || recs[5].Status != 400 {
		t.Errorf("forged signature record %+v", recs[5])
	}
}
