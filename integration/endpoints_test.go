package integration

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"image"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	aoption "github.com/anthropics/anthropic-sdk-go/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/shopspring/decimal"
	"github.com/tidwall/gjson"
)

// examplePrices returns prices.example.json, the quickstart's price file.
func examplePrices(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../prices.example.json")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// perMillion returns tokens × the price per million tokens, exactly.
func perMillion(tokens int64, price string) decimal.Decimal {
	return decimal.NewFromInt(tokens).Mul(decimal.RequireFromString(price)).Div(decimal.NewFromInt(1_000_000))
}

// TestEmbeddingsOpenAISDK creates embeddings with openai-go through the
// gateway and the mock, and checks the one ledger record of each request
// and its cost: usage.prompt_tokens at mock-embed's 0.02 per million.
func TestEmbeddingsOpenAISDK(t *testing.T) {
	startGateway(t, gatewayOptions{Prices: examplePrices(t)})
	key, _ := createKey(t, "embed-sdk")
	client := openai.NewClient(option.WithBaseURL(baseURL+"/v1/"), option.WithAPIKey(key), option.WithMaxRetries(0))
	res, err := client.Embeddings.New(context.Background(), openai.EmbeddingNewParams{
		Model:          "mock-embed",
		Input:          openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: []string{"the quick brown fox", "jumps over the lazy dog"}},
		EncodingFormat: openai.EmbeddingNewParamsEncodingFormatFloat,
		Dimensions:     openai.Int(4),
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Data) != 2 || len(res.Data[0].Embedding) != 4 || res.Usage.PromptTokens == 0 {
		t.Fatalf("embeddings %+v", res)
	}
	rec := waitLedger(t, "embed-sdk", 1)[0]
	want := perMillion(res.Usage.PromptTokens, "0.02")
	if rec.Endpoint != "embeddings" || rec.Model != "mock-embed" || rec.Usage.Input != res.Usage.PromptTokens || rec.Usage.Output != 0 ||
		rec.Outcome != "ok" || !sameDecimal(rec.Cost, want.String()) {
		t.Fatalf("record %+v, want %d input tokens costing %s", rec, res.Usage.PromptTokens, want)
	}

	// encoding_format base64 passes untouched: the answer holds strings.
	status, _, body := call(t, http.MethodPost, "/v1/embeddings", key, `{"model":"mock-embed","input":"abcdefgh","encoding_format":"base64"}`)
	if status != http.StatusOK || gjson.GetBytes(body, "data.0.embedding").Type != gjson.String {
		t.Fatalf("base64: %d %s", status, body)
	}
	recs := waitLedger(t, "embed-sdk", 2)
	if !sameDecimal(recs[1].Cost, perMillion(2, "0.02").String()) && !sameDecimal(recs[0].Cost, perMillion(2, "0.02").String()) {
		t.Fatalf("records %+v, want one of 2 input tokens", recs)
	}

	// Errors are in OpenAI's shape; an unknown model is refused before any
	// upstream sees it, and a chat model is not an embedding model.
	_, err = client.Embeddings.New(context.Background(), openai.EmbeddingNewParams{
		Model: "no-such-model", Input: openai.EmbeddingNewParamsInputUnion{OfString: openai.String("x")},
	})
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusNotFound || apiErr.Code != "model_not_found" {
		t.Fatalf("unknown model: %v", err)
	}
	status, _, body = call(t, http.MethodPost, "/v1/embeddings", key, `{"model":"mock-gpt","input":"x"}`)
	if e := decodeError(t, body); status != http.StatusBadRequest || e.Error.Param == nil || *e.Error.Param != "model" {
		t.Fatalf("chat model on embeddings: %d %s", status, body)
	}
	waitLedger(t, "embed-sdk", 2) // the refused requests left no record
}

// TestModelsRetrieve looks models up with both SDKs.
func TestModelsRetrieve(t *testing.T) {
	startGateway(t, gatewayOptions{})
	key, _ := createKey(t, "models-sdk")
	ctx := context.Background()
	client := openai.NewClient(option.WithBaseURL(baseURL+"/v1/"), option.WithAPIKey(key), option.WithMaxRetries(0))
	m, err := client.Models.Get(ctx, "mock-gpt")
	if err != nil {
		t.Fatal(err)
	}
	if m.ID != "mock-gpt" || m.OwnedBy != "mock" || m.Created == 0 {
		t.Fatalf("model %+v", m)
	}
	_, err = client.Models.Get(ctx, "gpt-nonexistent")
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusNotFound || apiErr.Code != "model_not_found" || apiErr.Type != "invalid_request_error" {
		t.Fatalf("unknown model: %v", err)
	}

	ac := anthropic.NewClient(aoption.WithBaseURL(baseURL), aoption.WithAPIKey(key), aoption.WithMaxRetries(0))
	info, err := ac.Models.Get(ctx, "mock-claude", anthropic.ModelGetParams{})
	if err != nil {
		t.Fatal(err)
	}
	if info.ID != "mock-claude" || string(info.Type) != "model" || info.DisplayName == "" || info.CreatedAt.IsZero() {
		t.Fatalf("anthropic model %+v", info)
	}
	page, err := ac.Models.List(ctx, anthropic.ModelListParams{})
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	for _, d := range page.Data {
		ids[d.ID] = true
	}
	if !ids["mock-claude"] || !ids["mock-gpt"] || !ids["mock-embed"] || page.HasMore {
		t.Fatalf("anthropic list %+v", page.Data)
	}
	_, err = ac.Models.Get(ctx, "claude-nonexistent", anthropic.ModelGetParams{})
	var aErr *anthropic.Error
	if !errors.As(err, &aErr) || aErr.StatusCode != http.StatusNotFound || gjson.Get(aErr.RawJSON(), "error.type").Str != "not_found_error" {
		t.Fatalf("anthropic unknown model: %v", err)
	}
	// The OpenAI list keeps its shape.
	status, _, body := call(t, http.MethodGet, "/v1/models", key, "")
	if status != http.StatusOK || gjson.GetBytes(body, "object").Str != "list" || gjson.GetBytes(body, `data.#(id=="mock-embed").object`).Str != "model" {
		t.Fatalf("openai list: %d %s", status, body)
	}
}

// TestCountTokensAnthropicSDK counts tokens with anthropic-sdk-go: the
// answer comes from the provider, nothing is billed, and the request
// counts against the key's rate limit.
func TestCountTokensAnthropicSDK(t *testing.T) {
	startGateway(t, gatewayOptions{Prices: examplePrices(t)})
	key, keyID := createKey(t, "count-sdk")
	ac := anthropic.NewClient(aoption.WithBaseURL(baseURL), aoption.WithAPIKey(key), aoption.WithMaxRetries(0))
	ctx := context.Background()
	params := anthropic.MessageCountTokensParams{
		Model:    "mock-claude",
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("How many tokens is this sentence?"))},
	}
	n, err := ac.Messages.CountTokens(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	if n.InputTokens <= 0 {
		t.Fatalf("count %+v", n)
	}
	if recs := ledgerOf(t, "count-sdk"); len(recs) != 0 {
		t.Fatalf("count_tokens left ledger records: %+v", recs)
	}
	// A chat model's count is the gateway's estimate
	// (TestCountTokensOtherProviders); an embedding model has none.
	_, err = ac.Messages.CountTokens(ctx, anthropic.MessageCountTokensParams{Model: "mock-embed", Messages: params.Messages})
	var aErr *anthropic.Error
	if !errors.As(err, &aErr) || aErr.StatusCode != http.StatusBadRequest || gjson.Get(aErr.RawJSON(), "error.type").Str != "invalid_request_error" {
		t.Fatalf("an embedding model: %v", err)
	}
	if status := adminJSON(t, http.MethodPut, "/air/budgets/key/"+keyID, `{"rpm":1}`, nil); status != http.StatusOK {
		t.Fatalf("set rpm: %d", status)
	}
	if _, err := ac.Messages.CountTokens(ctx, params); err != nil {
		t.Fatalf("first request under the limit: %v", err)
	}
	_, err = ac.Messages.CountTokens(ctx, params)
	if !errors.As(err, &aErr) || aErr.StatusCode != http.StatusTooManyRequests || gjson.Get(aErr.RawJSON(), "error.type").Str != "rate_limit_error" {
		t.Fatalf("over the rpm: %v", err)
	}
}

// TestImagesGenerateOpenAISDK generates images with openai-go: by url
// (re-hosted by the gateway) and in b64_json. Each request is an image
// task in the user's task list and one ledger record at mock-image's price
// per image.
func TestImagesGenerateOpenAISDK(t *testing.T) {
	startGateway(t, gatewayOptions{Prices: examplePrices(t)})
	key, _ := createKey(t, "images-sdk")
	client := openai.NewClient(option.WithBaseURL(baseURL+"/v1/"), option.WithAPIKey(key), option.WithMaxRetries(0))
	ctx := context.Background()

	byURL, err := client.Images.Generate(ctx, openai.ImageGenerateParams{
		Model: "mock-image", Prompt: "a red fox", N: openai.Int(2), Size: openai.ImageGenerateParamsSize256x256,
		ResponseFormat: openai.ImageGenerateParamsResponseFormatURL,
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(byURL.Data) != 2 || byURL.Created == 0 {
		t.Fatalf("images %+v", byURL)
	}
	for i, d := range byURL.Data {
		if !strings.HasPrefix(d.URL, baseURL+"/media/") || d.B64JSON != "" {
			t.Fatalf("image %d: not re-hosted by the gateway: %+v", i, d)
		}
		status, ctype, data := fetchMedia(t, d.URL)
		if status != http.StatusOK || ctype != "image/png" {
			t.Fatalf("image %d: %d %s", i, status, ctype)
		}
		if _, _, err := image.Decode(bytes.NewReader(data)); err != nil {
			t.Fatalf("image %d: not a PNG: %v", i, err)
		}
	}

	b64, err := client.Images.Generate(ctx, openai.ImageGenerateParams{
		Model: "mock-image", Prompt: "a blue fox", Size: openai.ImageGenerateParamsSize256x256,
		ResponseFormat: openai.ImageGenerateParamsResponseFormatB64JSON,
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(b64.Data) != 1 || b64.Data[0].URL != "" {
		t.Fatalf("b64 images %+v", b64)
	}
	png, err := base64.StdEncoding.DecodeString(b64.Data[0].B64JSON)
	if err != nil {
		t.Fatal(err)
	}
	if img, _, err := image.Decode(bytes.NewReader(png)); err != nil || img.Bounds().Dx() == 0 {
		t.Fatalf("b64_json is not an image: %v", err)
	}

	// Both requests are tasks of the user, and billed per image: 0.04 each.
	status, _, raw := call(t, http.MethodGet, "/v1/tasks?limit=10", key, "")
	if status != http.StatusOK || gjson.GetBytes(raw, "data.#").Int() != 2 || gjson.GetBytes(raw, "data.0.type").Str != "image" {
		t.Fatalf("task list: %d %s", status, raw)
	}
	images := map[int]bool{}
	for _, r := range waitLedger(t, "images-sdk", 2) {
		want := decimal.RequireFromString("0.04").Mul(decimal.NewFromInt(int64(r.Images)))
		if r.Endpoint != "tasks" || r.Model != "mock-image" || !sameDecimal(r.Cost, want.String()) {
			t.Fatalf("record %+v, want %d images costing %s", r, r.Images, want)
		}
		images[r.Images] = true
	}
	if !images[1] || !images[2] {
		t.Fatalf("records of %v images, want one of 2 and one of 1", images)
	}

	// Errors in OpenAI's shape: a chat model, a bad response_format.
	_, err = client.Images.Generate(ctx, openai.ImageGenerateParams{Model: "mock-gpt", Prompt: "x"})
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusBadRequest || apiErr.Param != "model" {
		t.Fatalf("chat model: %v", err)
	}
	status, _, raw = call(t, http.MethodPost, "/v1/images/generations", key, `{"model":"mock-image","prompt":"x","response_format":"gif"}`)
	if e := decodeError(t, raw); status != http.StatusBadRequest || e.Error.Param == nil || *e.Error.Param != "response_format" {
		t.Fatalf("bad response_format: %d %s", status, raw)
	}
}

// TestNodeSDKEndpoints runs integration/node/endpoints.test.mjs (the npm
// `openai` and `@anthropic-ai/sdk` packages on embeddings, images, model
// lookup and token counting), then checks the ledger: one record per
// billed request, each at its exact cost from prices.example.json, and
// none for token counting or model lookups.
func TestNodeSDKEndpoints(t *testing.T) {
	startGateway(t, gatewayOptions{Prices: examplePrices(t)})
	key, _ := createKey(t, "node-endpoints")
	if _, err := os.Stat("node/node_modules/openai"); err != nil {
		t.Fatalf("the npm SDKs are not installed (run scripts/test.sh, or npm ci in integration/node): %v", err)
	}
	cmd := exec.Command("node", "--test", "--test-reporter=spec", "endpoints.test.mjs")
	cmd.Dir = "node"
	cmd.Env = append(os.Environ(), "GATEWAY_URL="+baseURL, "AIR_KEY="+key)
	out, err := cmd.CombinedOutput()
	t.Logf("node --test:\n%s", out)
	if err != nil {
		t.Fatalf("the npm SDK tests failed: %v", err)
	}
	// Two embeddings requests and two image generations (1 and 2 images).
	var embeddings, images int
	for _, r := range waitLedger(t, "node-endpoints", 4) {
		var want decimal.Decimal
		switch r.Endpoint {
		case "embeddings":
			embeddings++
			want = perMillion(r.Usage.Input, "0.02")
		case "tasks":
			images += r.Images
			want = decimal.RequireFromString("0.04").Mul(decimal.NewFromInt(int64(r.Images)))
		default:
			t.Fatalf("unexpected record %+v", r)
		}
		if r.Outcome != "ok" || !sameDecimal(r.Cost, want.String()) {
			t.Fatalf("record %+v, want cost %s", r, want)
		}
	}
	if embeddings != 2 || images != 3 {
		t.Fatalf("%d embeddings records and %d images, want 2 and 3", embeddings, images)
	}
}
