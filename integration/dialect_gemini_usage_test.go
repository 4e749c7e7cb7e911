package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"
	"github.com/tidwall/gjson"
)

// TestDialectGeminiUsageAfterFinish streams from a gemini and a vertex
// model whose answer's usage comes after the finish reason, in a last
// chunk of its own (the chunks before carry the prompt's count alone), to
// the three client protocols with thinking on: each client sees the whole
// usage, thoughts included, and each exchange is billed exactly on it.
func TestDialectGeminiUsageAfterFinish(t *testing.T) {
	gc := newGoogleCloud(t, time.Hour)
	startGateway(t, gatewayOptions{Providers: gc.providers(), Models: googleModels, Prices: googlePrices})
	key, _ := createKey(t, "g-late-usage")
	ac, oc := anthropicClient(key), openAIClient(key)
	ctx := context.Background()
	const prompt = "Think it over mock:usage-chunk"
	var answers, models []string
	// got checks the fake's answer had the split shape, and that the
	// client saw the usage of its last chunk: input (cache reads
	// included) and output (thoughts included).
	got := func(m googleModel, client string, in, out int64) {
		t.Helper()
		_, answer, _, _ := m.fake.last(t)
		var chunks []string
		for _, line := range strings.Split(answer, "\n") {
			if d, ok := strings.CutPrefix(strings.TrimSpace(line), "data: "); ok {
				chunks = append(chunks, d)
			}
		}
		u := reportedUsage(answer)
		if len(chunks) < 3 || gjson.Get(chunks[len(chunks)-1], "candidates").Exists() ||
			gjson.Get(chunks[len(chunks)-2], "candidates.0.finishReason").Str != "STOP" ||
			gjson.Get(chunks[len(chunks)-2], "usageMetadata.candidatesTokenCount").Exists() || u.Get("thoughtsTokenCount").Int() == 0 {
			t.Fatalf("%s, %s: the fake did not split its usage:\n%s", m.name, client, answer)
		}
		if in != u.Get("promptTokenCount").Int() || out != u.Get("candidatesTokenCount").Int()+u.Get("thoughtsTokenCount").Int() {
			t.Errorf("%s, %s: the client saw input %d output %d, the provider reported %s", m.name, client, in, out, u.Raw)
		}
		answers, models = append(answers, answer), append(models, m.name)
	}
	for _, m := range gc.models() {
		// Anthropic SDK, /v1/messages.
		stream := ac.Messages.NewStreaming(ctx, anthropic.MessageNewParams{
			Model: m.name, MaxTokens: 4096, Thinking: anthropic.ThinkingConfigParamOfEnabled(1024),
			Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(prompt))},
		})
		var msg anthropic.Message
		for stream.Next() {
			if err := msg.Accumulate(stream.Current()); err != nil {
				t.Fatal(err)
			}
		}
		if err := stream.Err(); err != nil {
			t.Fatalf("%s: %v", m.name, err)
		}
		var thought, text string
		for _, b := range msg.Content {
			thought, text = thought+b.Thinking, text+b.Text
		}
		if thought != "Considering: "+prompt || text != "Mock reply to: "+prompt || msg.StopReason != "end_turn" {
			t.Fatalf("%s: message %s", m.name, msg.RawJSON())
		}
		got(m, "messages", msg.Usage.InputTokens+msg.Usage.CacheReadInputTokens, msg.Usage.OutputTokens)

		// OpenAI SDK, /v1/chat/completions, with the usage chunk asked for.
		cs := oc.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{
			Model: m.name, ReasoningEffort: shared.ReasoningEffortLow,
			Messages:      []openai.ChatCompletionMessageParamUnion{openai.UserMessage(prompt)},
			StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
		})
		acc := openai.ChatCompletionAccumulator{}
		for cs.Next() {
			acc.AddChunk(cs.Current())
		}
		if err := cs.Err(); err != nil {
			t.Fatalf("%s: %v", m.name, err)
		}
		if acc.Choices[0].Message.Content != "Mock reply to: "+prompt || acc.Choices[0].FinishReason != "stop" ||
			acc.Usage.CompletionTokensDetails.ReasoningTokens == 0 {
			t.Fatalf("%s: chat stream %+v usage %+v", m.name, acc.Choices, acc.Usage)
		}
		got(m, "chat", acc.Usage.PromptTokens, acc.Usage.CompletionTokens)

		// OpenAI SDK, /v1/responses.
		s, err := readRespStream(t, responses.ResponseNewParams{Model: m.name, Reasoning: shared.ReasoningParam{Effort: shared.ReasoningEffortLow},
			Input: respInput(respUser(prompt))}, oc)
		if err != nil {
			t.Fatalf("%s: %v", m.name, err)
		}
		if s.summary != "Considering: "+prompt || s.text != "Mock reply to: "+prompt || s.finalType != "response.completed" ||
			s.final.Usage.OutputTokensDetails.ReasoningTokens == 0 {
			t.Fatalf("%s: responses stream %q %q %s", m.name, s.summary, s.text, s.final.RawJSON())
		}
		got(m, "responses", s.final.Usage.InputTokens, s.final.Usage.OutputTokens)
	}

	// One record per exchange, priced exactly on the last chunk's usage.
	recs := waitLedger(t, "g-late-usage", len(answers))
	for i, rec := range recs {
		if rec.Endpoint != []string{"messages", "chat", "responses"}[i%3] || rec.Outcome != "ok" ||
			rec.Provider != map[string]string{"gem-flash": "gem", "vtx-pro": "vtx"}[models[i]] || rec.Usage.Reasoning == 0 {
			t.Errorf("Test %d: record %+v", i, rec)
		}
		checkCost(t, models[i], rec, models[i], answers[i])
	}
}
