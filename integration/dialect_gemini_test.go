package integration

import (
	"context"
	"encoding/json"
	"errors"
	"math/big"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	aoption "github.com/anthropics/anthropic-sdk-go/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"
	"github.com/tidwall/gjson"
)

// pngPixel is a 1×1 PNG, base64.
const pngPixel = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="

// googleModel is a model of the fakes and the fake that serves it.
type googleModel struct {
	name     string
	fake     *googleFake
	upstream string // the model in the upstream URL
}

func (gc *googleCloud) models() []googleModel {
	return []googleModel{{"gem-flash", gc.gemini, "gemini-2.5-flash"}, {"vtx-pro", gc.vertex, "gemini-2.5-pro"}}
}

// wantCost is the cost the price file gives the usage Gemini reported
// in answer: the cached tokens at the input price times the cache read
// multiplier, the rest of the prompt at the input price, the candidates
// and thoughts at the output price, per million tokens.
func wantCost(t *testing.T, model, answer string) (*big.Rat, gjson.Result) {
	t.Helper()
	u := reportedUsage(answer)
	if !u.Exists() {
		t.Fatalf("no usageMetadata in the answer:\n%s", answer)
	}
	p := gjson.Get(googlePrices, "models."+model)
	rat := func(s string) *big.Rat { r, _ := new(big.Rat).SetString(s); return r }
	mul := func(n int64, price string) *big.Rat { return new(big.Rat).Mul(big.NewRat(n, 1), rat(price)) }
	cached := u.Get("cachedContentTokenCount").Int()
	cost := new(big.Rat).Add(mul(u.Get("promptTokenCount").Int()-cached, p.Get("tiers.0.input").Str), new(big.Rat).Mul(mul(cached, p.Get("tiers.0.input").Str), rat(p.Get("cache.read").Str)))
	cost.Add(cost, mul(u.Get("candidatesTokenCount").Int()+u.Get("thoughtsTokenCount").Int(), p.Get("tiers.0.output").Str))
	return cost.Quo(cost, big.NewRat(1_000_000, 1)), u
}

// checkCost compares a ledger record with the usage its fake reported.
func checkCost(t *testing.T, what string, rec ledgerRecord, model, answer string) {
	t.Helper()
	want, u := wantCost(t, model, answer)
	cached := u.Get("cachedContentTokenCount").Int()
	if rec.Usage.Input != u.Get("promptTokenCount").Int()-cached || rec.Usage.CacheRead != cached ||
		rec.Usage.Output != u.Get("candidatesTokenCount").Int()+u.Get("thoughtsTokenCount").Int() ||
		rec.Usage.Reasoning != u.Get("thoughtsTokenCount").Int() || !rec.Priced {
		t.Errorf("%s: record usage %+v, provider reported %s", what, rec.Usage, u.Raw)
	}
	if got, ok := new(big.Rat).SetString(rec.Cost); !ok || got.Cmp(want) != 0 {
		t.Errorf("%s: cost %s, want %s (provider reported %s)", what, rec.Cost, want.FloatString(12), u.Raw)
	}
}

// TestDialectGeminiOpenAISDK drives a gemini and a vertex model with the
// OpenAI SDK through /v1/chat/completions: a plain answer, a stream, a
// streamed tool call and its result's turn, reasoning across two turns
// (its signature sent back, a forged one refused), an image, and the
// exact cost of each exchange.
func TestDialectGeminiOpenAISDK(t *testing.T) {
	gc := newGoogleCloud(t, time.Hour)
	startGateway(t, gatewayOptions{Providers: gc.providers(), Models: googleModels, Prices: googlePrices})
	key, _ := createKey(t, "o2g")
	client := openAIClient(key)
	ctx := context.Background()
	var answers []string // the fakes' answers, in the ledger's order
	var models []string
	got := func(m googleModel) {
		_, answer, path, _ := m.fake.last(t)
		if !strings.Contains(path, "/"+m.upstream+":") {
			t.Errorf("%s: upstream path %s", m.name, path)
		}
		answers, models = append(answers, answer), append(models, m.name)
	}
	for _, m := range gc.models() {
		r, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
			Model:    m.name,
			Messages: []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("Be terse."), openai.UserMessage("Hello GPT client")},
		})
		if err != nil {
			t.Fatal(err)
		}
		body, _, path, _ := m.fake.last(t)
		if r.Choices[0].Message.Content != "Mock reply to: Hello GPT client" || r.Choices[0].FinishReason != "stop" || r.Usage.PromptTokens == 0 ||
			!strings.HasSuffix(path, ":generateContent") || gjson.Get(body, "systemInstruction.parts.0.text").Str != "Be terse." {
			t.Fatalf("%s: completion %+v (sent %s to %s)", m.name, r, body, path)
		}
		got(m)

		// A stream, with the usage of its last chunk.
		stream := client.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{
			Model:         m.name,
			Messages:      []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Stream me a longer answer please")},
			StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
		})
		acc := openai.ChatCompletionAccumulator{}
		chunks := 0
		for stream.Next() {
			acc.AddChunk(stream.Current())
			chunks++
		}
		if err := stream.Err(); err != nil {
			t.Fatal(err)
		}
		_, _, path, _ = m.fake.last(t)
		if acc.Choices[0].Message.Content != "Mock reply to: Stream me a longer answer please" || chunks < 5 || acc.Usage.CompletionTokens == 0 ||
			!strings.HasSuffix(path, ":streamGenerateContent?alt=sse") {
			t.Fatalf("%s: stream of %d chunks %+v usage %+v (%s)", m.name, chunks, acc.Choices, acc.Usage, path)
		}
		got(m)

		// A streamed tool call, then the result's turn.
		stream = client.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{
			Model:         m.name,
			Messages:      []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Weather in Oslo?")},
			Tools:         []openai.ChatCompletionToolUnionParam{openAIWeather},
			StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
		})
		acc = openai.ChatCompletionAccumulator{}
		for stream.Next() {
			acc.AddChunk(stream.Current())
		}
		if err := stream.Err(); err != nil {
			t.Fatal(err)
		}
		call := acc.Choices[0].Message.ToolCalls
		if acc.Choices[0].FinishReason != "tool_calls" || len(call) != 1 || call[0].Function.Name != "get_weather" || call[0].ID == "" ||
			gjson.Get(call[0].Function.Arguments, "query").Str != "Weather in Oslo?" {
			t.Fatalf("%s: tool call %+v", m.name, acc.Choices[0])
		}
		got(m)
		res, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
			Model: m.name, Tools: []openai.ChatCompletionToolUnionParam{openAIWeather},
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Weather in Oslo?"), acc.Choices[0].Message.ToParam(),
				openai.ToolMessage(`{"temp":12}`, call[0].ID)},
		})
		if err != nil {
			t.Fatal(err)
		}
		body, _, _, _ = m.fake.last(t)
		// Gemini matches a result to its call by name: the id was mapped
		// back to the call's.
		if !strings.Contains(res.Choices[0].Message.Content, "Tool result:") || !strings.Contains(res.Choices[0].Message.Content, "12") ||
			gjson.Get(body, "contents.2.parts.0.functionResponse.name").Str != "get_weather" {
			t.Fatalf("%s: answer after the tool result %+v (sent %s)", m.name, res.Choices[0], body)
		}
		got(m)

		// Reasoning: its text streams, and the signed block comes back in
		// the second turn.
		stream = client.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{
			Model: m.name, ReasoningEffort: shared.ReasoningEffortLow,
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
		if reasoning != "Considering: Think about Oslo" || content == "" || gjson.Get(blocks, "0.signature").Str == "" {
			t.Fatalf("%s: reasoning %q content %q blocks %s", m.name, reasoning, content, blocks)
		}
		got(m)
		turn := func(blocks string) (*openai.ChatCompletion, error) {
			var v any
			if err := json.Unmarshal([]byte(blocks), &v); err != nil {
				t.Fatal(err)
			}
			return client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
				Model: m.name, ReasoningEffort: shared.ReasoningEffortLow,
				Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Think about Oslo"), openai.AssistantMessage(content),
					openai.UserMessage("And Rome?")},
			}, option.WithJSONSet("messages.1.thinking_blocks", v))
		}
		second, err := turn(blocks)
		if err != nil {
			t.Fatal(err)
		}
		body, _, _, _ = m.fake.last(t)
		if !strings.Contains(second.Choices[0].Message.Content, "Rome") || !strings.Contains(body, `"thoughtSignature"`) {
			t.Fatalf("%s: second turn %s (sent %s)", m.name, second.Choices[0].Message.RawJSON(), body)
		}
		got(m)
		// A forged signature is the provider's 400, in OpenAI's shape.
		_, err = turn(strings.Replace(blocks, gjson.Get(blocks, "0.signature").Str, "forged", 1))
		var apiErr *openai.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || apiErr.Type != "invalid_request_error" {
			t.Fatalf("%s: forged signature: %v", m.name, err)
		}
		answers, models = append(answers, ""), append(models, "")

		img, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
			Model: m.name,
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage([]openai.ChatCompletionContentPartUnionParam{
				openai.TextContentPart("What is this?"),
				openai.ImageContentPart(openai.ChatCompletionContentPartImageImageURLParam{URL: "data:image/png;base64," + pngPixel}),
			})},
		})
		if err != nil {
			t.Fatal(err)
		}
		body, _, _, _ = m.fake.last(t)
		if gjson.Get(body, "contents.0.parts.#(inlineData).inlineData.data").Str != pngPixel ||
			gjson.Get(body, "contents.0.parts.#(inlineData).inlineData.mimeType").Str != "image/png" || img.Choices[0].Message.Content == "" {
			t.Fatalf("%s: image request %s answered %+v", m.name, body, img.Choices[0])
		}
		got(m)
	}

	// One record per exchange, each priced exactly on what Gemini
	// reported (thoughts at the output price).
	recs := waitLedger(t, "o2g", len(answers))
	for i, rec := range recs {
		if models[i] == "" {
			if rec.Status != 400 {
				t.Errorf("Test %d: the forged turn's record %+v", i, rec)
			}
			continue
		}
		if rec.Endpoint != "chat" || rec.Outcome != "ok" || rec.Provider != map[string]string{"gem-flash": "gem", "vtx-pro": "vtx"}[models[i]] {
			t.Errorf("Test %d: record %+v", i, rec)
		}
		checkCost(t, models[i], rec, models[i], answers[i])
	}
}

// TestDialectGeminiAnthropicSDK drives a gemini and a vertex model with
// the Anthropic SDK through /v1/messages: a plain answer, a stream,
// thinking with a tool call across two turns (Gemini 3 checks the call's
// thought signature), an image, and the exact cost with cached tokens.
func TestDialectGeminiAnthropicSDK(t *testing.T) {
	gc := newGoogleCloud(t, time.Hour)
	startGateway(t, gatewayOptions{Providers: gc.providers(), Models: googleModels, Prices: googlePrices})
	key, _ := createKey(t, "a2g")
	client := anthropicClient(key)
	ctx := context.Background()
	var answers, models []string
	got := func(m googleModel) {
		_, answer, _, _ := m.fake.last(t)
		answers, models = append(answers, answer), append(models, m.name)
	}
	// A system prompt long enough for the fake's implicit cache.
	long := strings.Repeat("You answer questions about European cities, tersely. ", 8)
	for _, m := range gc.models() {
		msg, err := client.Messages.New(ctx, anthropic.MessageNewParams{
			Model: m.name, MaxTokens: 512,
			Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Hello Claude client"))},
		})
		if err != nil {
			t.Fatal(err)
		}
		if msg.Content[0].Text != "Mock reply to: Hello Claude client" || msg.StopReason != "end_turn" || msg.Usage.InputTokens == 0 {
			t.Fatalf("%s: message %+v", m.name, msg)
		}
		got(m)

		stream := client.Messages.NewStreaming(ctx, anthropic.MessageNewParams{
			Model: m.name, MaxTokens: 512,
			Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Stream me a longer answer please"))},
		})
		var acc anthropic.Message
		events := 0
		for stream.Next() {
			if err := acc.Accumulate(stream.Current()); err != nil {
				t.Fatal(err)
			}
			events++
		}
		if err := stream.Err(); err != nil {
			t.Fatal(err)
		}
		if acc.Content[0].Text != "Mock reply to: Stream me a longer answer please" || events < 8 || acc.Usage.OutputTokens == 0 || acc.Usage.InputTokens == 0 {
			t.Fatalf("%s: stream of %d events %+v", m.name, events, acc)
		}
		got(m)

		// Thinking and a tool call, streamed; the second turn sends both
		// back with the result.
		q := anthropic.NewUserMessage(anthropic.NewTextBlock("Weather in Oslo?"))
		params := anthropic.MessageNewParams{
			Model: m.name, MaxTokens: 4096, Thinking: anthropic.ThinkingConfigParamOfEnabled(1024),
			System: []anthropic.TextBlockParam{{Text: long}}, Tools: []anthropic.ToolUnionParam{weatherTool},
			Messages: []anthropic.MessageParam{q},
		}
		stream = client.Messages.NewStreaming(ctx, params)
		var first anthropic.Message
		for stream.Next() {
			if err := first.Accumulate(stream.Current()); err != nil {
				t.Fatal(err)
			}
		}
		if err := stream.Err(); err != nil {
			t.Fatal(err)
		}
		if len(first.Content) != 2 || first.Content[0].Type != "thinking" || first.Content[0].Thinking != "Considering: Weather in Oslo?" ||
			first.Content[1].Type != "tool_use" || first.Content[1].Name != "get_weather" || first.StopReason != "tool_use" {
			t.Fatalf("%s: first turn %+v", m.name, first.Content)
		}
		got(m)
		params.Messages = []anthropic.MessageParam{q, first.ToParam(),
			anthropic.NewUserMessage(anthropic.NewToolResultBlock(first.Content[1].ID, `{"temp":12}`, false))}
		var resp *http.Response
		second, err := client.Messages.New(ctx, params, aoption.WithResponseInto(&resp))
		if err != nil {
			t.Fatal(err)
		}
		body, _, _, _ := m.fake.last(t)
		// Gemini signs the text after the thought: the signature is a
		// thinking block of its own, before the text.
		last := second.Content[len(second.Content)-1]
		if len(second.Content) != 3 || second.Content[0].Type != "thinking" || second.Content[1].Signature == "" || !strings.Contains(last.Text, "Tool result:") ||
			gjson.Get(body, "contents.1.parts.#(functionCall).thoughtSignature").Str == "" || second.Usage.CacheReadInputTokens == 0 {
			t.Fatalf("%s: second turn %+v (sent %s)", m.name, second, body)
		}
		got(m)

		img, err := client.Messages.New(ctx, anthropic.MessageNewParams{
			Model: m.name, MaxTokens: 256,
			Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("What is this?"),
				anthropic.NewImageBlockBase64("image/png", pngPixel))},
		})
		if err != nil {
			t.Fatal(err)
		}
		body, _, _, _ = m.fake.last(t)
		if gjson.Get(body, "contents.0.parts.#(inlineData).inlineData.data").Str != pngPixel || img.Content[0].Text == "" {
			t.Fatalf("%s: image request %s answered %+v", m.name, body, img.Content)
		}
		got(m)
	}
	recs := waitLedger(t, "a2g", len(answers))
	for i, rec := range recs {
		if rec.Endpoint != "messages" || rec.Outcome != "ok" {
			t.Errorf("Test %d: record %+v", i, rec)
		}
		checkCost(t, models[i], rec, models[i], answers[i])
	}
	// The second thinking turn read the cached system prompt, and its
	// thoughts were billed.
	for _, i := range []int{3, 8} {
		if recs[i].Usage.CacheRead == 0 || recs[i].Usage.Reasoning == 0 || recs[i].Usage.Output <= recs[i].Usage.Reasoning {
			t.Errorf("Test %d: record %+v, want cache reads and thoughts", i, recs[i].Usage)
		}
	}
}
