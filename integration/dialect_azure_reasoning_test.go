package integration

import (
	"context"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"
	"github.com/tidwall/gjson"
)

// azureReasoner is a fake Azure OpenAI o-series deployment: as Azure's,
// it shows no reasoning text, only its tokens in
// completion_tokens_details.reasoning_tokens (counted in
// completion_tokens), more of them for reasoning_effort high; the first
// turn's answer is "Oslo: 9 degrees", the second's "Rome: 21 degrees".
func azureReasoner(t *testing.T) *upstream {
	return newUpstream(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
		reasoning := int64(64)
		if gjson.GetBytes(body, "reasoning_effort").Str == "high" {
			reasoning = 512
		}
		answer, prompt := "Oslo: 9 degrees", int64(14)
		if gjson.GetBytes(body, "messages.#").Int() > 1 {
			answer, prompt = "Rome: 21 degrees", 31
		}
		usage := fmt.Sprintf(`{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d,"prompt_tokens_details":{"cached_tokens":0},"completion_tokens_details":{"reasoning_tokens":%d}}`,
			prompt, reasoning+5, prompt+reasoning+5, reasoning)
		if gjson.GetBytes(body, "stream").Bool() {
			sseWrite(w, "data: {\"choices\":[],\"created\":0,\"id\":\"\",\"model\":\"\",\"object\":\"\",\"prompt_filter_results\":[{\"prompt_index\":0,\"content_filter_results\":{}}]}\n\n",
				`data: {"id":"chatcmpl-o1","object":"chat.completion.chunk","created":1,"model":"o4-mini-2025-04-16","choices":[{"index":0,"delta":{"role":"assistant","content":"`+answer[:5]+`"},"finish_reason":null}],"usage":null}`+"\n\n",
				`data: {"id":"chatcmpl-o1","object":"chat.completion.chunk","created":1,"model":"o4-mini-2025-04-16","choices":[{"index":0,"delta":{"content":"`+answer[5:]+`"},"finish_reason":"stop"}],"usage":null}`+"\n\n",
				`data: {"id":"chatcmpl-o1","object":"chat.completion.chunk","created":1,"model":"o4-mini-2025-04-16","choices":[],"usage":`+usage+"}\n\n",
				"data: [DONE]\n\n")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":"chatcmpl-o2","object":"chat.completion","created":1,"model":"o4-mini-2025-04-16","choices":[{"index":0,"message":{"role":"assistant","content":"`+answer+`","refusal":null},"finish_reason":"stop"}],"usage":`+usage+`}`)
	})
}

// TestDialectAzureChatReasoning: the OpenAI SDK's chat client reasons
// across two turns with an azure o-series deployment, as
// docs/providers/azure.md says: the body goes as sent, reasoning_effort
// included, on each turn (a stream first, the second turn with the first
// answer in its history); the reasoning tokens Azure reports reach the
// client and are billed as output, exactly.
func TestDialectAzureChatReasoning(t *testing.T) {
	az := azureReasoner(t)
	startGateway(t, gatewayOptions{
		Providers: fmt.Sprintf("provider az-reason {\n\t\t\tprotocol azure\n\t\t\tendpoint %s\n\t\t\tapi_key az-secret\n\t\t\tapi_version 2025-04-01-preview\n\t\t\tretries 0\n\t\t}", az.URL),
		Models:    "model o4-azure az-reason o4-mini-prod",
		Prices:    `{"currency":"USD","models":{"o4-azure":{"tiers":[{"input":"1.1","output":"4.4"}]}}}`,
	})
	key, _ := createKey(t, "azure-reason")
	client := openAIClient(key)
	ctx := context.Background()
	q := openai.UserMessage("Think about the weather in Oslo")
	stream := client.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{Model: "o4-azure", ReasoningEffort: shared.ReasoningEffortHigh,
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}, Messages: []openai.ChatCompletionMessageParamUnion{q}})
	var acc openai.ChatCompletionAccumulator
	for stream.Next() {
		acc.AddChunk(stream.Current())
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if len(acc.Choices) != 1 || acc.Choices[0].Message.Content != "Oslo: 9 degrees" || acc.Usage.CompletionTokensDetails.ReasoningTokens != 512 || acc.Usage.CompletionTokens != 517 {
		t.Fatalf("first turn %+v", acc.ChatCompletion)
	}
	second, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "o4-azure", ReasoningEffort: shared.ReasoningEffortLow,
		Messages: []openai.ChatCompletionMessageParamUnion{q, acc.Choices[0].Message.ToParam(), openai.UserMessage("And Rome?")}})
	if err != nil {
		t.Fatal(err)
	}
	if second.Choices[0].Message.Content != "Rome: 21 degrees" || second.Usage.CompletionTokensDetails.ReasoningTokens != 64 {
		t.Fatalf("second turn %s", second.RawJSON())
	}
	// Azure got reasoning_effort as the client sent it, and the first
	// answer in the second turn's history.
	az.mu.Lock()
	bodies, paths := az.bodies, az.paths
	az.mu.Unlock()
	if len(bodies) != 2 || gjson.GetBytes(bodies[0], "reasoning_effort").Str != "high" || gjson.GetBytes(bodies[1], "reasoning_effort").Str != "low" ||
		gjson.GetBytes(bodies[1], "messages.1.content").Str != "Oslo: 9 degrees" || paths[1] != "/openai/deployments/o4-mini-prod/chat/completions" {
		t.Fatalf("Azure got %q %q at %q", bodies, bodies[len(bodies)-1], paths)
	}
	recs := waitLedger(t, "azure-reason", 2)
	for i, want := range []struct{ input, output, reasoning int64 }{{14, 517, 512}, {31, 69, 64}} {
		r := recs[i]
		// input×1.1 + output (reasoning included)×4.4 per million tokens.
		cost := new(big.Rat).SetFrac64(want.input*11+want.output*44, 10_000_000)
		if got, ok := new(big.Rat).SetString(r.Cost); r.Usage.Input != want.input || r.Usage.Output != want.output || r.Usage.Reasoning != want.reasoning ||
			!r.Priced || r.Endpoint != "chat" || !ok || got.Cmp(cost) != 0 {
			t.Errorf("Test %d: record %+v, want cost %s", i, r, cost.FloatString(9))
		}
	}
}
