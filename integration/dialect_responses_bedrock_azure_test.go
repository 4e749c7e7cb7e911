package integration

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
	"github.com/tidwall/gjson"
)

// TestDialectResponsesSDKToBedrockAzure drives a bedrock and an azure
// model with the OpenAI SDK's Responses API: a plain answer, a stream, a
// streamed function call and its function_call_output's turn, the exact
// cost of each exchange (one record each, endpoint responses), and last
// the provider's 429 reaching the SDK with its Retry-After.
func TestDialectResponsesSDKToBedrockAzure(t *testing.T) {
	az := newAzureRecorder(t)
	// Providers of their own for the 429s: a 429 cools its provider down,
	// and that state outlives a test's config.
	throttled := "provider aws-r2-throttled {\n\t\t\tprotocol bedrock\n\t\t\tregion us-east-1\n\t\t\tbase_url http://localhost:9080/mock/bedrock\n" +
		"\t\t\taccess_key_id AKIDMOCKBEDROCK\n\t\t\tsecret_access_key mock-bedrock-secret\n\t\t\tretries 0\n\t\t}"
	rec := throttled + "\n\t\t" + fmt.Sprintf("provider az-r2-rec {\n\t\t\tprotocol azure\n\t\t\tendpoint %s\n\t\t\tapi_key az-secret\n\t\t\tapi_version 2025-04-01-preview\n\t\t\tretries 0\n\t\t}", az.URL)
	startGateway(t, gatewayOptions{MockOptions: bedrockMock, Providers: bedrockProviders + "\n\t\t" + azureProviders + "\n\t\t" + rec,
		Models: bedrockModels + "\n\t\t" + azureModels + "\n\t\tmodel gpt-az az-r2-rec gpt-4o-prod\n\t\tmodel claude-r2-throttled aws-r2-throttled anthropic.claude-3-7-sonnet-20250219-v1:0",
		Prices: `{"currency":"USD","models":{"claude-bedrock":{"tiers":[{"input":"3","output":"15"}],"cache":{"creation":"1.25","read":"0.1"}},` +
			`"gpt-az*":{"tiers":[{"input":"2.5","output":"10"}]}}}`})
	key, _ := createKey(t, "r2cloud")
	client := openAIClient(key)
	ctx := context.Background()
	type usage struct{ in, out int64 }
	var seen []usage // what the SDK was told, in the ledger's order
	for _, model := range []string{"claude-bedrock", "gpt-azure"} {
		r, err := client.Responses.New(ctx, responses.ResponseNewParams{Model: model, Instructions: openai.String("Be terse."),
			Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("Hello Responses client")}})
		if err != nil {
			t.Fatalf("%s: %v", model, err)
		}
		if !strings.Contains(r.OutputText(), "Hello Responses client") || r.Status != "completed" || r.Usage.InputTokens == 0 || r.Usage.OutputTokens == 0 {
			t.Fatalf("%s: response %s", model, r.RawJSON())
		}
		seen = append(seen, usage{r.Usage.InputTokens, r.Usage.OutputTokens})

		s, err := readRespStream(t, responses.ResponseNewParams{Model: model,
			Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("Stream me a longer answer please")}}, client)
		if err != nil {
			t.Fatalf("%s: %v", model, err)
		}
		if !strings.Contains(s.text, "Stream me a longer answer please") || s.final.OutputText() != s.text || s.final.Status != "completed" ||
			s.final.Usage.InputTokens == 0 || s.final.Usage.OutputTokens == 0 {
			t.Fatalf("%s: stream %q %s", model, s.text, s.final.RawJSON())
		}
		seen = append(seen, usage{s.final.Usage.InputTokens, s.final.Usage.OutputTokens})

		s, err = readRespStream(t, responses.ResponseNewParams{Model: model, Tools: []responses.ToolUnionParam{respWeather},
			Input: respInput(respUser("Weather in Oslo?"))}, client)
		if err != nil {
			t.Fatalf("%s: %v", model, err)
		}
		var call responses.ResponseFunctionToolCall
		for _, it := range s.final.Output {
			if it.Type == "function_call" {
				call = it.AsFunctionCall()
			}
		}
		if call.Name != "get_weather" || call.CallID == "" || call.Arguments != s.args || s.argDeltas < 2 || s.final.Usage.InputTokens == 0 {
			t.Fatalf("%s: function call (%d argument deltas) %s", model, s.argDeltas, s.final.RawJSON())
		}
		seen = append(seen, usage{s.final.Usage.InputTokens, s.final.Usage.OutputTokens})
		// The function output's turn: the fake Bedrock answers with the
		// result it got; the mock OpenAI behind the fake Azure does not, so
		// that turn goes to a recording Azure, whose request is checked.
		next := map[string]string{"claude-bedrock": "claude-bedrock", "gpt-azure": "gpt-az"}[model]
		res, err := client.Responses.New(ctx, responses.ResponseNewParams{Model: next, Tools: []responses.ToolUnionParam{respWeather},
			Input: respInput(append(append([]responses.ResponseInputItemUnionParam{respUser("Weather in Oslo?")}, asInput(t, s.final.Output)...),
				callOutput(call.CallID, `{"temp":12}`))...)})
		if err != nil {
			t.Fatalf("%s: %v", next, err)
		}
		if next == "claude-bedrock" && (!strings.Contains(res.OutputText(), "Tool result:") || !strings.Contains(res.OutputText(), "12")) ||
			next == "gpt-az" && res.OutputText() != "Hi from Azure" || res.Status != "completed" {
			t.Fatalf("%s: answer after the function output %s", next, res.RawJSON())
		}
		if next == "gpt-az" {
			az.mu.Lock()
			body := az.seen[len(az.seen)-1].body
			az.mu.Unlock()
			if gjson.GetBytes(body, "messages.1.tool_calls.0.id").Str != call.CallID || gjson.GetBytes(body, "messages.1.tool_calls.0.function.arguments").Str != call.Arguments ||
				gjson.GetBytes(body, "messages.2.role").Str != "tool" || gjson.GetBytes(body, "messages.2.tool_call_id").Str != call.CallID ||
				!strings.Contains(gjson.GetBytes(body, "messages.2.content").Raw, `{\"temp\":12}`) {
				t.Fatalf("Azure got %s", body)
			}
		}
		seen = append(seen, usage{res.Usage.InputTokens, res.Usage.OutputTokens})
	}

	// The providers' 429s, with their Retry-After, reach the SDK.
	for _, tc := range []struct{ model, prompt string }{{"claude-r2-throttled", "mock:throttle"}, {"gpt-az", "429"}} {
		_, err := client.Responses.New(ctx, responses.ResponseNewParams{Model: tc.model,
			Input: responses.ResponseNewParamsInputUnion{OfString: openai.String(tc.prompt)}})
		var apiErr *openai.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != 429 || apiErr.Response.Header.Get("Retry-After") != "7" || apiErr.Message == "" {
			t.Errorf("%s: 429: %v", tc.model, err)
		}
	}

	recs := waitLedger(t, "r2cloud", len(seen)+2)
	if len(recs) != len(seen)+2 {
		t.Fatalf("%d ledger records, want %d", len(recs), len(seen)+2)
	}
	for i, r := range recs[:len(seen)] {
		provider, in, out := "aws", int64(300), int64(1500) // cents per million tokens
		if i >= 4 {
			provider, in, out = "az", 250, 1000
		}
		if i == 7 {
			provider = "az-r2-rec"
		}
		u := seen[i]
		want := new(big.Rat).SetFrac64(u.in*in+u.out*out, 100_000_000)
		if r.Endpoint != "responses" || r.Outcome != "ok" || r.Provider != provider || r.Usage.Input != u.in || r.Usage.Output != u.out ||
			r.Usage.CacheRead != 0 || r.Usage.CacheCreation != 0 {
			t.Errorf("Test %d: record %+v, the SDK saw %+v", i, r, u)
		}
		checkBedrockCost(t, i, r, want)
	}
	for i, r := range recs[len(seen):] {
		if r.Endpoint != "responses" || r.Outcome != "upstream_error" || r.Status != 429 {
			t.Errorf("Test 429 %d: record %+v", i, r)
		}
	}
}
