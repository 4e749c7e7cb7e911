package integration

import (
	"context"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	aoption "github.com/anthropics/anthropic-sdk-go/option"
)

// anthropicClient is the official Anthropic SDK pointed at the gateway.
func anthropicClient(key string) anthropic.Client {
	return anthropic.NewClient(aoption.WithBaseURL(baseURL), aoption.WithAPIKey(key), aoption.WithMaxRetries(0))
}

// weatherTool is a tool the mock calls with arguments of its schema.
var weatherTool = anthropic.ToolUnionParam{OfTool: &anthropic.ToolParam{
	Name:        "get_weather",
	Description: anthropic.String("The weather in a city"),
	InputSchema: anthropic.ToolInputSchemaParam{Properties: map[string]any{
		"city": map[string]any{"type": "string"}, "unit": map[string]any{"type": "string"}}},
}}

// TestDialectAnthropicSDKToOpenAIModel drives mock-gpt, an OpenAI-protocol
// model, with the Anthropic SDK through /v1/messages: a plain answer, a
// stream, and a streamed tool call followed by its result's turn.
func TestDialectAnthropicSDKToOpenAIModel(t *testing.T) {
	startGateway(t, gatewayOptions{})
	key, _ := createKey(t, "a2o")
	client := anthropicClient(key)
	ctx := context.Background()

	m, err := client.Messages.New(ctx, anthropic.MessageNewParams{
		Model: "mock-gpt", MaxTokens: 512,
		System:   []anthropic.TextBlockParam{{Text: "You are terse."}},
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Hello Claude client"))},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Content) != 1 || !strings.Contains(m.Content[0].Text, "Hello Claude client") || m.StopReason != anthropic.StopReasonEndTurn ||
		m.Usage.InputTokens == 0 || m.Usage.OutputTokens == 0 || m.Model != "mock-gpt" {
		t.Fatalf("message %+v", m)
	}

	stream := client.Messages.NewStreaming(ctx, anthropic.MessageNewParams{
		Model: "mock-gpt", MaxTokens: 512,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Stream to Claude"))},
	})
	var acc anthropic.Message
	for stream.Next() {
		if err := acc.Accumulate(stream.Current()); err != nil {
			t.Fatal(err)
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if len(acc.Content) != 1 || !strings.Contains(acc.Content[0].Text, "Stream to Claude") || acc.StopReason != anthropic.StopReasonEndTurn ||
		acc.Usage.InputTokens == 0 || acc.Usage.OutputTokens == 0 {
		t.Fatalf("accumulated %+v", acc)
	}

	q := anthropic.NewUserMessage(anthropic.NewTextBlock("Weather in Oslo?"))
	stream = client.Messages.NewStreaming(ctx, anthropic.MessageNewParams{
		Model: "mock-gpt", MaxTokens: 512, Tools: []anthropic.ToolUnionParam{weatherTool},
		Messages: []anthropic.MessageParam{q},
	})
	acc = anthropic.Message{}
	deltas := 0
	for stream.Next() {
		ev := stream.Current()
		if ev.Type == "content_block_delta" && ev.Delta.Type == "input_json_delta" {
			deltas++
		}
		if err := acc.Accumulate(ev); err != nil {
			t.Fatal(err)
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if acc.StopReason != anthropic.StopReasonToolUse || len(acc.Content) != 1 || acc.Content[0].Type != "tool_use" ||
		acc.Content[0].Name != "get_weather" || !strings.HasPrefix(acc.Content[0].ID, "call_") || deltas < 2 {
		t.Fatalf("tool call (%d argument deltas) %+v", deltas, acc)
	}
	if !strings.Contains(string(acc.Content[0].Input), `"city"`) {
		t.Fatalf("tool input %s", acc.Content[0].Input)
	}
	res, err := client.Messages.New(ctx, anthropic.MessageNewParams{
		Model: "mock-gpt", MaxTokens: 512, Tools: []anthropic.ToolUnionParam{weatherTool},
		Messages: []anthropic.MessageParam{q, acc.ToParam(),
			anthropic.NewUserMessage(anthropic.NewToolResultBlock(acc.Content[0].ID, "12 degrees and rain", false))},
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.StopReason != anthropic.StopReasonEndTurn || len(res.Content) != 1 || res.Content[0].Type != "text" {
		t.Fatalf("answer after the tool result %+v", res)
	}
	recs := waitLedger(t, "a2o", 4)
	for i, r := range recs {
		if r.Endpoint != "messages" || r.Model != "mock-gpt" || r.Provider != "mock" || r.Source != "reported" || r.Outcome != "ok" {
			t.Errorf("Test %d: record %+v", i, r)
		}
	}
}
