package integration

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	aoption "github.com/anthropics/anthropic-sdk-go/option"
	"github.com/tidwall/gjson"
)

// TestCountTokensOtherProviders counts tokens with anthropic-sdk-go for
// models whose provider does not speak Messages: a gemini and a vertex
// model are counted by the fake Gemini's countTokens (its real wire, the
// provider's auth), an openai, a bedrock and an azure model by the
// gateway's own estimate, marked as one. A provider's refusal reaches the SDK in Anthropic's shape;
// nothing is billed.
func TestCountTokensOtherProviders(t *testing.T) {
	gc := newGoogleCloud(t, time.Hour)
	bad := "provider gem-bad {\n\t\t\tprotocol gemini\n\t\t\tbase_url " + gc.gemini.URL + "\n\t\t\tapi_key not-the-key\n\t\t\tretries 0\n\t\t}"
	startGateway(t, gatewayOptions{MockOptions: bedrockMock, Providers: gc.providers() + "\n\t\t" + bad + "\n\t\t" + bedrockProviders + "\n\t\t" + azureProviders,
		Models: googleModels + "\n\t\tmodel gem-bad gem-bad gemini-2.5-flash\n\t\t" + bedrockModels + "\n\t\t" + azureModels, Prices: googlePrices})
	key, _ := createKey(t, "count-clouds")
	ac := anthropicClient(key)
	ctx := context.Background()
	params := func(model, text string) anthropic.MessageCountTokensParams {
		return anthropic.MessageCountTokensParams{Model: model,
			System:   anthropic.MessageCountTokensParamsSystemUnion{OfTextBlockArray: []anthropic.TextBlockParam{{Text: "Be terse."}}},
			Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(text))},
			Tools: []anthropic.MessageCountTokensToolUnionParam{{OfTool: &anthropic.ToolParam{Name: "get_weather",
				InputSchema: anthropic.ToolInputSchemaParam{Properties: map[string]any{"city": map[string]any{"type": "string"}}}}}}}
	}
	for _, m := range gc.models() {
		var resp *http.Response
		n, err := ac.Messages.CountTokens(ctx, params(m.name, "How many tokens is this sentence?"), aoption.WithResponseInto(&resp))
		if err != nil {
			t.Fatalf("%s: %v", m.name, err)
		}
		body, answer, path, auth := m.fake.last(t)
		req := gjson.Parse(body)
		if m.name == "gem-flash" {
			if req.Get("contents").Exists() || req.Get("generateContentRequest.model").Str != "models/gemini-2.5-flash" {
				t.Errorf("%s: sent %s", m.name, body)
			}
			req = req.Get("generateContentRequest")
		}
		if !strings.HasSuffix(path, "/models/"+m.upstream+":countTokens") || auth == "" ||
			req.Get("contents.0.parts.0.text").Str != "How many tokens is this sentence?" || req.Get("systemInstruction.parts.0.text").Str != "Be terse." ||
			req.Get("tools.0.functionDeclarations.0.name").Str != "get_weather" {
			t.Errorf("%s: sent %s to %s", m.name, body, path)
		}
		if want := gjson.Get(answer, "totalTokens").Int(); want == 0 || n.InputTokens != want || resp.Header.Get("X-Air-Token-Count") != "" {
			t.Errorf("%s: counted %d (header %q), Gemini said %s", m.name, n.InputTokens, resp.Header.Get("X-Air-Token-Count"), answer)
		}
	}
	// Google's refusal of the provider's key: the gateway's fault, not
	// the client's key's, in Anthropic's shape.
	_, err := ac.Messages.CountTokens(ctx, params("gem-bad", "Hello"))
	var aErr *anthropic.Error
	if !errors.As(err, &aErr) || aErr.StatusCode != http.StatusBadGateway || gjson.Get(aErr.RawJSON(), "type").Str != "error" ||
		gjson.Get(aErr.RawJSON(), "error.type").Str != "api_error" || !strings.Contains(gjson.Get(aErr.RawJSON(), "error.message").Str, "credentials") {
		t.Errorf("a refused key: %v", err)
	}

	// Google's 429, with its RetryInfo as Retry-After.
	_, err = ac.Messages.CountTokens(ctx, params("vtx-pro", "mock:throttle"))
	if !errors.As(err, &aErr) || aErr.StatusCode != http.StatusTooManyRequests || gjson.Get(aErr.RawJSON(), "error.type").Str != "rate_limit_error" ||
		aErr.Response.Header.Get("Retry-After") != "17" {
		t.Errorf("throttled: %v", err)
	}

	// An openai, a bedrock and an azure model: the gateway's estimate,
	// said to be one, growing with the prompt.
	for _, model := range []string{"mock-gpt", "claude-bedrock", "gpt-azure"} {
		var counts []int64
		for _, text := range []string{"Hello", "Hello " + strings.Repeat("and a much longer question about the weather ", 20)} {
			var resp *http.Response
			n, err := ac.Messages.CountTokens(ctx, params(model, text), aoption.WithResponseInto(&resp))
			if err != nil {
				t.Fatalf("%s: %v", model, err)
			}
			if resp.Header.Get("X-Air-Token-Count") != "estimate" || n.InputTokens <= 0 {
				t.Fatalf("%s: estimate %d, header %q", model, n.InputTokens, resp.Header.Get("X-Air-Token-Count"))
			}
			counts = append(counts, n.InputTokens)
		}
		if counts[1] <= counts[0]+100 {
			t.Errorf("%s: the estimates %v do not grow with the prompt", model, counts)
		}
	}
	// A model of a kind that has no prompt to count stays a 400.
	_, err = ac.Messages.CountTokens(ctx, params("mock-embed", "Hello"))
	if !errors.As(err, &aErr) || aErr.StatusCode != http.StatusBadRequest {
		t.Errorf("an embedding model: %v", err)
	}
	if recs := ledgerOf(t, "count-clouds"); len(recs) != 0 {
		t.Errorf("count_tokens left ledger records: %s", fmt.Sprint(recs))
	}
}
