package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/openai/openai-go/v3"
)

// TestDialectGeminiSmoke: both SDKs reach a gemini and a vertex model.
func TestDialectGeminiSmoke(t *testing.T) {
	gc := newGoogleCloud(t, time.Hour)
	startGateway(t, gatewayOptions{Providers: gc.providers(), Models: googleModels, Prices: googlePrices})
	key, _ := createKey(t, "g-smoke")
	ctx := context.Background()
	oc, ac := openAIClient(key), anthropicClient(key)
	for _, model := range []string{"gem-flash", "vtx-pro"} {
		r, err := oc.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
			Model: model, Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hello Gemini")}})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s chat: %+v", model, r.Choices[0].Message.Content)
		m, err := ac.Messages.New(ctx, anthropic.MessageNewParams{Model: model, MaxTokens: 100,
			Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Hello Claude"))}})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(m.Content[0].Text, "Hello Claude") {
			t.Fatalf("%+v", m)
		}
	}
}
