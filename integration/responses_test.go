package integration

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/shopspring/decimal"
)

// respPrices prices the mock's models for the Responses tests; the
// expected costs below are computed from these numbers, per million
// tokens, with cache reads at respCacheRead times the input price.
const (
	respPrices = `{"currency":"USD","models":{` +
		`"mock-gpt":{"tiers":[{"input":"0.80","output":"2.00"}],"cache":{"read":"0.1"}},` +
		`"mock-reasoner":{"tiers":[{"input":"2.00","output":"8.00"}],"cache":{"read":"0.25"}},` +
		`"twin-gpt":{"tiers":[{"input":"1.00","output":"3.00"}],"cache":{"read":"0.5"}}}}`
)

// respPrice is the test's own copy of respPrices.
var respPrice = map[string]struct{ in, out, read string }{
	"mock-gpt":      {"0.80", "2.00", "0.1"},
	"mock-reasoner": {"2.00", "8.00", "0.25"},
	"twin-gpt":      {"1.00", "3.00", "0.5"},
}

// expected is what a response's ledger record must hold, derived from the
// usage the SDK saw.
type expected struct {
	model                            string
	input, cacheRead, output, reason int64
	cost                             decimal.Decimal
}

// expect derives the record of a response of model with usage u: cached
// tokens are part of input_tokens, reasoning part of output_tokens.
func expect(model string, u responses.ResponseUsage) expected {
	p := respPrice[model]
	in, out, read := decimal.RequireFromString(p.in), decimal.RequireFromString(p.out), decimal.RequireFromString(p.read)
	cached := u.InputTokensDetails.CachedTokens
	plain := u.InputTokens - cached
	cost := in.Mul(decimal.NewFromInt(plain)).
		Add(in.Mul(read).Mul(decimal.NewFromInt(cached))).
		Add(out.Mul(decimal.NewFromInt(u.OutputTokens))).
		Div(decimal.NewFromInt(1_000_000))
	return expected{model, plain, cached, u.OutputTokens, u.OutputTokensDetails.ReasoningTokens, cost}
}

// checkRecords compares user's ledger with want, in any order.
func checkRecords(t *testing.T, user string, want []expected) {
	t.Helper()
	recs := waitLedger(t, user, len(want))
	key := func(e expected) string {
		return fmt.Sprintf("%s in=%d read=%d out=%d reasoning=%d cost=%s", e.model, e.input, e.cacheRead, e.output, e.reason, e.cost.String())
	}
	var got, exp []string
	for _, r := range recs {
		if r.Endpoint != "responses" || r.Source != "reported" || !r.Priced {
			t.Errorf("record %+v", r)
		}
		c, err := decimal.NewFromString(r.Cost)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, key(expected{r.Model, r.Usage.Input, r.Usage.CacheRead, r.Usage.Output, r.Usage.Reasoning, c}))
	}
	for _, e := range want {
		exp = append(exp, key(e))
	}
	sort.Strings(got)
	sort.Strings(exp)
	if strings.Join(got, "\n") != strings.Join(exp, "\n") {
		t.Fatalf("ledger of %s:\n%s\nwant:\n%s", user, strings.Join(got, "\n"), strings.Join(exp, "\n"))
	}
}

// respClient is an openai-go client of the gateway with key.
func respClient(key string) openai.Client {
	return openai.NewClient(option.WithBaseURL(baseURL+"/v1/"), option.WithAPIKey(key), option.WithMaxRetries(0))
}

// isNotFound reports an OpenAI-shaped 404.
func isNotFound(err error) bool {
	var e *openai.Error
	return errors.As(err, &e) && e.StatusCode == http.StatusNotFound && e.Type == "invalid_request_error"
}

func TestResponsesOpenAISDK(t *testing.T) {
	startGateway(t, gatewayOptions{Prices: respPrices})
	keyA, _ := createKey(t, "resp-a")
	keyB, _ := createKey(t, "resp-b")
	a, b := respClient(keyA), respClient(keyB)
	ctx := context.Background()
	var want []expected

	first, err := a.Responses.New(ctx, responses.ResponseNewParams{
		Model: "mock-gpt",
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("Hello responses")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(first.OutputText(), "Hello responses") || first.Status != "completed" || first.Usage.InputTokens == 0 {
		t.Fatalf("response %+v", first)
	}
	want = append(want, expect("mock-gpt", first.Usage))

	// Streamed, continuing the first: the events arrive in order, the
	// deltas make the text, response.completed carries the usage.
	stream := a.Responses.NewStreaming(ctx, responses.ResponseNewParams{
		Model:              "mock-reasoner",
		Input:              responses.ResponseNewParamsInputUnion{OfString: openai.String("Stream it")},
		PreviousResponseID: openai.String(first.ID),
	})
	var types []string
	var text strings.Builder
	var done responses.Response
	for stream.Next() {
		ev := stream.Current()
		types = append(types, ev.Type)
		switch ev.Type {
		case "response.output_text.delta":
			text.WriteString(ev.Delta)
		case "response.completed":
			done = ev.Response
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if types[0] != "response.created" || types[len(types)-1] != "response.completed" || !strings.Contains(text.String(), "Stream it") ||
		done.OutputText() != text.String() || done.Usage.InputTokensDetails.CachedTokens == 0 || done.Usage.OutputTokensDetails.ReasoningTokens == 0 {
		t.Fatalf("stream %v, text %q, completed %+v", types, text.String(), done.Usage)
	}
	want = append(want, expect("mock-reasoner", done.Usage))

	// JSON, continuing the streamed one.
	third, err := a.Responses.New(ctx, responses.ResponseNewParams{
		Model:              "mock-gpt",
		Input:              responses.ResponseNewParamsInputUnion{OfString: openai.String("And again")},
		PreviousResponseID: openai.String(done.ID),
	})
	if err != nil {
		t.Fatal(err)
	}
	if third.PreviousResponseID != done.ID || third.Usage.InputTokensDetails.CachedTokens != done.Usage.InputTokens {
		t.Fatalf("continuation %+v", third.Usage)
	}
	want = append(want, expect("mock-gpt", third.Usage))

	// The creator retrieves it, and its input items; another user gets
	// 404 for the same calls and cannot continue it.
	got, err := a.Responses.Get(ctx, third.ID, responses.ResponseGetParams{})
	if err != nil || got.ID != third.ID || got.OutputText() != third.OutputText() {
		t.Fatalf("retrieve: %v %+v", err, got)
	}
	items, err := a.Responses.InputItems.List(ctx, third.ID, responses.InputItemListParams{})
	if err != nil || len(items.Data) != 1 {
		t.Fatalf("input items: %v %+v", err, items)
	}
	if _, err := b.Responses.Get(ctx, third.ID, responses.ResponseGetParams{}); !isNotFound(err) {
		t.Fatalf("another user's retrieve: %v", err)
	}
	if _, err := b.Responses.InputItems.List(ctx, third.ID, responses.InputItemListParams{}); !isNotFound(err) {
		t.Fatalf("another user's input items: %v", err)
	}
	if err := b.Responses.Delete(ctx, third.ID); !isNotFound(err) {
		t.Fatalf("another user's delete: %v", err)
	}
	_, err = b.Responses.New(ctx, responses.ResponseNewParams{
		Model:              "mock-gpt",
		Input:              responses.ResponseNewParamsInputUnion{OfString: openai.String("steal")},
		PreviousResponseID: openai.String(third.ID),
	})
	if !isNotFound(err) {
		t.Fatalf("another user's continuation: %v", err)
	}
	if _, err := a.Responses.Get(ctx, "resp_unknown", responses.ResponseGetParams{}); !isNotFound(err) {
		t.Fatalf("unknown id: %v", err)
	}
	if err := a.Responses.Delete(ctx, third.ID); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if _, err := a.Responses.Get(ctx, third.ID, responses.ResponseGetParams{}); !isNotFound(err) {
		t.Fatalf("retrieve after delete: %v", err)
	}

	// One record per create, none for retrievals or refusals.
	checkRecords(t, "resp-a", want)
	if recs := ledgerOf(t, "resp-b"); len(recs) != 0 {
		t.Fatalf("records of the other user: %+v", recs)
	}
}

// TestResponsesBackground: a background response is not billed when it
// is created (its usage is unknown), but once, when a retrieval shows it
// completed.
func TestResponsesBackground(t *testing.T) {
	startGateway(t, gatewayOptions{Prices: respPrices})
	key, _ := createKey(t, "resp-bg")
	c := respClient(key)
	ctx := context.Background()
	r, err := c.Responses.New(ctx, responses.ResponseNewParams{
		Model:      "mock-gpt",
		Input:      responses.ResponseNewParamsInputUnion{OfString: openai.String("Later please")},
		Background: openai.Bool(true),
	})
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != "queued" {
		t.Fatalf("status %s", r.Status)
	}
	if recs := ledgerOf(t, "resp-bg"); len(recs) != 0 {
		t.Fatalf("billed before completion: %+v", recs)
	}
	var done *responses.Response
	for range 2 {
		if done, err = c.Responses.Get(ctx, r.ID, responses.ResponseGetParams{}); err != nil {
			t.Fatal(err)
		}
	}
	if done.Status != "completed" || done.Usage.OutputTokens == 0 {
		t.Fatalf("retrieved %+v", done)
	}
	checkRecords(t, "resp-bg", []expected{expect("mock-gpt", done.Usage)})
	if rec := ledgerOf(t, "resp-bg")[0]; rec.Outcome != "ok" || rec.Provider != "mock" {
		t.Fatalf("record %+v", rec)
	}
}

// TestResponsesPinnedDeployment: a provider with two deployments (two
// mock instances, which do not share responses) is used round-robin for
// creates, while every retrieval and continuation goes to the deployment
// that holds the response; a wrong one would answer 404.
func TestResponsesPinnedDeployment(t *testing.T) {
	startGateway(t, gatewayOptions{
		Prices: respPrices,
		Site:   "handle_path /mock2/* {\n\t\tair_mock {\n\t\t\tapi_key mock-upstream-key\n\t\t}\n\t}",
		Providers: `provider twin {
			protocol openai
			base_url http://localhost:9080/mock/v1 http://localhost:9080/mock2/v1
			api_key mock-upstream-key mock-upstream-key
			retries 0
		}`,
		Models: "model twin-gpt twin",
	})
	key, _ := createKey(t, "resp-twin")
	c := respClient(key)
	ctx := context.Background()
	var want []expected
	for i := range 4 {
		r, err := c.Responses.New(ctx, responses.ResponseNewParams{
			Model: "twin-gpt",
			Input: responses.ResponseNewParamsInputUnion{OfString: openai.String(fmt.Sprintf("twin %d", i))},
		})
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, expect("twin-gpt", r.Usage))
		if _, err := c.Responses.Get(ctx, r.ID, responses.ResponseGetParams{}); err != nil {
			t.Fatalf("retrieve %d: %v", i, err)
		}
		next, err := c.Responses.New(ctx, responses.ResponseNewParams{
			Model:              "twin-gpt",
			Input:              responses.ResponseNewParamsInputUnion{OfString: openai.String("more")},
			PreviousResponseID: openai.String(r.ID),
		})
		if err != nil {
			t.Fatalf("continuation %d: %v", i, err)
		}
		want = append(want, expect("twin-gpt", next.Usage))
	}
	checkRecords(t, "resp-twin", want)
}
