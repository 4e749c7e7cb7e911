package integration

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/tidwall/gjson"
)

// moderationPrices prices one moderation model per request and leaves the
// other at 0, as OpenAI does.
const moderationPrices = `{"currency": "USD", "models": {
	"omni-moderation-latest": {"request": "0"},
	"paid-moderation": {"request": "0.0005"},
	"mock-gpt": {"tiers": [{"input": "1", "output": "2"}]}
}}`

// TestModerationsOpenAISDK moderates with openai-go through the gateway
// and the mock: the answer is the provider's, flagged where the mock
// flags; each request leaves one ledger record billed by its request
// price (0 is priced, not unpriced), with no tokens.
func TestModerationsOpenAISDK(t *testing.T) {
	startGateway(t, gatewayOptions{Prices: moderationPrices, Models: "model paid-moderation mock {\n\t\t\tkind moderation\n\t\t}"})
	key, _ := createKey(t, "moderations-sdk")
	client := openai.NewClient(option.WithBaseURL(baseURL+"/v1/"), option.WithAPIKey(key), option.WithMaxRetries(0))
	ctx := context.Background()
	res, err := client.Moderations.New(ctx, openai.ModerationNewParams{
		Model: openai.ModerationModelOmniModerationLatest,
		Input: openai.ModerationNewParamsInputUnion{OfStringArray: []string{"I will kill the process", "a kind word"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Results) != 2 || !res.Results[0].Flagged || !res.Results[0].Categories.Violence || res.Results[1].Flagged ||
		res.Model != "omni-moderation-latest" {
		t.Fatalf("moderation %+v", res)
	}
	rec := waitLedger(t, "moderations-sdk", 1)[0]
	if rec.Endpoint != "moderations" || rec.Model != "omni-moderation-latest" || rec.Outcome != "ok" || !rec.Priced ||
		!sameDecimal(rec.Cost, "0") || rec.Usage.Input != 0 || rec.Usage.Output != 0 || rec.Source != "units" {
		t.Fatalf("record %+v, want one priced at 0 with no tokens", rec)
	}

	_, err = client.Moderations.New(ctx, openai.ModerationNewParams{
		Model: "paid-moderation",
		Input: openai.ModerationNewParamsInputUnion{OfString: openai.String("hello")},
	})
	if err != nil {
		t.Fatal(err)
	}
	recs := waitLedger(t, "moderations-sdk", 2)
	if len(recs) != 2 || recs[1].Model != "paid-moderation" || !sameDecimal(recs[1].Cost, "0.0005") {
		t.Fatalf("records %+v, want the second at 0.0005", recs)
	}

	// A chat model is not a moderation model, an unknown one is not
	// found, and a request without input is refused; none reaches the
	// upstream or the ledger.
	var apiErr *openai.Error
	_, err = client.Moderations.New(ctx, openai.ModerationNewParams{Model: "mock-gpt",
		Input: openai.ModerationNewParamsInputUnion{OfString: openai.String("x")}})
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusBadRequest || apiErr.Param != "model" {
		t.Fatalf("chat model: %v", err)
	}
	_, err = client.Moderations.New(ctx, openai.ModerationNewParams{Model: "no-such-model",
		Input: openai.ModerationNewParamsInputUnion{OfString: openai.String("x")}})
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusNotFound || apiErr.Code != "model_not_found" {
		t.Fatalf("unknown model: %v", err)
	}
	status, _, body := call(t, http.MethodPost, "/v1/moderations", key, `{"model":"omni-moderation-latest"}`)
	if e := decodeError(t, body); status != http.StatusBadRequest || e.Error.Param == nil || *e.Error.Param != "input" {
		t.Fatalf("no input: %d %s", status, body)
	}
	if recs := ledgerOf(t, "moderations-sdk"); len(recs) != 2 {
		t.Fatalf("%d records, want 2: %+v", len(recs), recs)
	}

	// The models list names each model's kind: the endpoint it is for.
	_, _, list := call(t, http.MethodGet, "/v1/models", key, "")
	for model, kind := range map[string]string{"omni-moderation-latest": "moderation", "mock-tts": "speech",
		"whisper-1": "transcription", "mock-rerank": "rerank", "mock-gpt": "chat", "mock-embed": "embedding"} {
		if got := gjson.GetBytes(list, `data.#(id=="`+model+`").kind`).Str; got != kind {
			t.Errorf("%s listed as kind %q, want %q: %s", model, got, kind, list)
		}
	}
}
