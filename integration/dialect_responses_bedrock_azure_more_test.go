package integration

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"net/http/httputil"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"
	"github.com/tidwall/gjson"

	"github.com/caddy-air/caddy-air/dialect/bedrock"
)

// recordingClouds are a fake Bedrock of its own and a recorder in front
// of the mock's fake Azure, each keeping what the gateway sent and what
// it was answered, and the providers and models that reach them.
type recordingClouds struct {
	bedrock, azure *googleFake
}

// newRecordingClouds starts them; the Azure recorder forwards to the
// gateway's mock (bedrockMock's azure_key), which must be running.
func newRecordingClouds(t *testing.T) *recordingClouds {
	mock, _ := url.Parse(baseURL + "/mock/azure")
	return &recordingClouds{
		bedrock: newGoogleFake(t, &bedrock.Server{Region: "us-west-2", AccessKeyID: "AKIDRECORDED", SecretKey: "recorded-secret"}),
		azure:   newGoogleFake(t, &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) { r.SetURL(mock) }}),
	}
}

func (c *recordingClouds) providers() string {
	return fmt.Sprintf(`provider aws-rec {
			protocol bedrock
			region us-west-2
			base_url %s
			access_key_id AKIDRECORDED
			secret_access_key recorded-secret
			retries 0
		}
		provider az-mockrec {
			protocol azure
			endpoint %s
			api_key mock-azure-key
			api_version 2025-04-01-preview
			retries 0
		}`, c.bedrock.URL, c.azure.URL)
}

// recordingModels: a Claude model on Bedrock, and two Azure deployments,
// the second a reasoning model's (whose name makes the mock behind the
// fake Azure answer with reasoning_content and reasoning_tokens).
const recordingModels = `model claude-bedrock-rec aws-rec us.anthropic.claude-sonnet-4-20250514-v1:0
		model gpt-az-rec az-mockrec gpt-4o-prod
		model reasoner-az-rec az-mockrec o4-mini-reasoning`

// recordingPrices prices them per million tokens: Bedrock's Claude at 3
// and 15, the Azure deployments at 2.5 and 10.
const recordingPrices = `{"currency":"USD","models":{"claude-bedrock-rec":{"tiers":[{"input":"3","output":"15"}]},` +
	`"gpt-az-rec":{"tiers":[{"input":"2.5","output":"10"}]},"reasoner-az-rec":{"tiers":[{"input":"2.5","output":"10"}]}}}`

// reportedTokens is the input and output a provider reported in answer:
// a Converse answer's or event stream's usage (Bedrock), or a Chat
// Completions answer's or stream's last usage (Azure).
func reportedTokens(t *testing.T, answer string) (in, out int64) {
	t.Helper()
	if m := regexp.MustCompile(`"inputTokens":(\d+),"outputTokens":(\d+)`).FindAllStringSubmatch(answer, -1); len(m) > 0 {
		in, _ = strconv.ParseInt(m[len(m)-1][1], 10, 64)
		out, _ = strconv.ParseInt(m[len(m)-1][2], 10, 64)
		return in, out
	}
	u := reportedChatUsage(answer)
	if !u.Exists() {
		t.Fatalf("no usage in the provider's answer:\n%s", answer)
	}
	return u.Get("prompt_tokens").Int(), u.Get("completion_tokens").Int()
}

// reportedChatUsage is the last usage object of a Chat Completions answer
// or stream.
func reportedChatUsage(answer string) gjson.Result {
	var u gjson.Result
	for _, line := range strings.Split(answer, "\n") {
		line = strings.TrimPrefix(strings.TrimSpace(line), "data: ")
		if v := gjson.Get(line, "usage"); v.IsObject() {
			u = v
		}
	}
	return u
}

// TestDialectResponsesSDKBedrockAzureReasoningImage drives a bedrock and
// an azure model with the OpenAI SDK's Responses API through an image
// input and reasoning across two turns: Bedrock's signed reasoningContent
// comes back to it in the second turn (a forged signature is refused);
// Azure's Chat Completions take reasoning_effort but no reasoning input,
// so the reasoning item sent back is left out and reported in
// X-Air-Dropped-Params. Each exchange is billed exactly on the usage the
// provider reported, which is also what the SDK was shown.
func TestDialectResponsesSDKBedrockAzureReasoningImage(t *testing.T) {
	rc := newRecordingClouds(t)
	startGateway(t, gatewayOptions{MockOptions: bedrockMock, Providers: rc.providers(), Models: recordingModels, Prices: recordingPrices})
	key, _ := createKey(t, "r2cloud-more")
	client := openAIClient(key)
	ctx := context.Background()
	type exchange struct {
		model   string
		in, out int64 // what the SDK was shown
		answer  string
	}
	var seen []exchange // in the ledger's order; model "" for a refused one
	record := func(fake *googleFake, model string, u responses.ResponseUsage) string {
		t.Helper()
		body, answer, _, _ := fake.last(t)
		seen = append(seen, exchange{model, u.InputTokens, u.OutputTokens, answer})
		return body
	}
	image := func(model string) *responses.Response {
		t.Helper()
		r, err := client.Responses.New(ctx, responses.ResponseNewParams{Model: model, Input: respInput(
			responses.ResponseInputItemParamOfMessage(responses.ResponseInputMessageContentListParam{
				responses.ResponseInputContentParamOfInputText("What is this?"),
				{OfInputImage: &responses.ResponseInputImageParam{Detail: "auto", ImageURL: openai.String("data:image/png;base64," + pngPixel)}},
			}, responses.EasyInputMessageRoleUser))})
		if err != nil {
			t.Fatalf("%s: image: %v", model, err)
		}
		return r
	}

	// Bedrock: the image goes as Converse's image block, its bytes base64.
	r := image("claude-bedrock-rec")
	body := record(rc.bedrock, "claude-bedrock-rec", r.Usage)
	if r.OutputText() != "Mock reply to: What is this?" || r.Status != "completed" ||
		gjson.Get(body, "messages.0.content.#(image).image.format").Str != "png" ||
		gjson.Get(body, "messages.0.content.#(image).image.source.bytes").Str != pngPixel {
		t.Fatalf("bedrock image: sent %s, answered %s", body, r.RawJSON())
	}

	// Bedrock reasoning: the thinking streams as the summary, the signature
	// is the reasoning item's encrypted_content, and the second turn sends
	// both back as Converse's reasoningContent.
	effort := shared.ReasoningParam{Effort: shared.ReasoningEffortLow}
	s, err := readRespStream(t, responses.ResponseNewParams{Model: "claude-bedrock-rec", Reasoning: effort,
		Include: []responses.ResponseIncludable{responses.ResponseIncludableReasoningEncryptedContent}, Store: openai.Bool(false),
		Input: respInput(respUser("Think about Oslo"))}, client)
	if err != nil {
		t.Fatal(err)
	}
	body = record(rc.bedrock, "claude-bedrock-rec", s.final.Usage)
	if len(s.final.Output) != 2 || s.final.Output[0].Type != "reasoning" || s.summary != "Considering: Think about Oslo" ||
		!strings.HasPrefix(s.final.Output[0].EncryptedContent, "sig-") || s.text != "Mock reply to: Think about Oslo" ||
		gjson.Get(body, "additionalModelRequestFields.thinking.type").Str != "enabled" ||
		gjson.Get(body, "additionalModelRequestFields.thinking.budget_tokens").Int() != 1024 {
		t.Fatalf("bedrock reasoning: sent %s, streamed %q %q %s", body, s.summary, s.text, s.final.RawJSON())
	}
	sig := s.final.Output[0].EncryptedContent
	turn := func(items []responses.ResponseInputItemUnionParam, opts ...option.RequestOption) (*responses.Response, error) {
		in := append(append([]responses.ResponseInputItemUnionParam{respUser("Think about Oslo")}, items...), respUser("And Rome?"))
		return client.Responses.New(ctx, responses.ResponseNewParams{Model: "claude-bedrock-rec", Reasoning: effort,
			Input: respInput(in...)}, opts...)
	}
	second, err := turn(asInput(t, s.final.Output))
	if err != nil {
		t.Fatal(err) // the fake refuses a reasoning block whose signature changed
	}
	body = record(rc.bedrock, "claude-bedrock-rec", second.Usage)
	rt := gjson.Get(body, "messages.1.content.0.reasoningContent.reasoningText")
	if rt.Get("text").Str != "Considering: Think about Oslo" || rt.Get("signature").Str != sig ||
		gjson.Get(body, "messages.1.content.1.text").Str != "Mock reply to: Think about Oslo" ||
		second.Output[0].Type != "reasoning" || second.OutputText() != "Mock reply to: And Rome?" {
		t.Fatalf("bedrock second turn: sent %s, answered %s", body, second.RawJSON())
	}
	forged := asInput(t, s.final.Output)
	forged[0] = responses.ResponseInputItemUnionParam{OfReasoning: &responses.ResponseReasoningItemParam{ID: s.final.Output[0].ID,
		Summary:          []responses.ResponseReasoningItemSummaryParam{{Text: s.summary}},
		EncryptedContent: openai.String("sig-forged")}}
	_, err = turn(forged)
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || apiErr.Type != "invalid_request_error" || !strings.Contains(apiErr.Message, "signature") {
		b, _, _, _ := rc.bedrock.last(t)
		t.Fatalf("bedrock forged signature: %v (sent %s)", err, b)
	}
	seen = append(seen, exchange{})

	// Azure: the image goes as a Chat Completions image_url part.
	r = image("gpt-az-rec")
	body = record(rc.azure, "gpt-az-rec", r.Usage)
	if !strings.Contains(r.OutputText(), "What is this?") || r.Status != "completed" ||
		gjson.Get(body, "messages.0.content.#(type==\"image_url\").image_url.url").Str != "data:image/png;base64,"+pngPixel ||
		gjson.Get(body, "model").Str != "gpt-4o-prod" {
		t.Fatalf("azure image: sent %s, answered %s", body, r.RawJSON())
	}

	// Azure reasoning: reasoning.effort reaches the deployment as
	// reasoning_effort; the reasoning it streams (reasoning_content)
	// becomes a reasoning item without encrypted_content, and its tokens
	// the usage's reasoning_tokens.
	s, err = readRespStream(t, responses.ResponseNewParams{Model: "reasoner-az-rec", Reasoning: effort,
		Input: respInput(respUser("Think about Oslo"))}, client)
	if err != nil {
		t.Fatal(err)
	}
	body = record(rc.azure, "reasoner-az-rec", s.final.Usage)
	_, answer, _, _ := rc.azure.last(t)
	reported := reportedChatUsage(answer).Get("completion_tokens_details.reasoning_tokens").Int()
	if gjson.Get(body, "reasoning_effort").Str != "low" || s.summary == "" || s.final.Output[0].Type != "reasoning" ||
		s.final.Output[0].EncryptedContent != "" || !strings.Contains(s.text, "Think about Oslo") ||
		reported == 0 || s.final.Usage.OutputTokensDetails.ReasoningTokens != reported {
		t.Fatalf("azure reasoning: sent %s, streamed %q %q %s", body, s.summary, s.text, s.final.RawJSON())
	}
	// The second turn: Chat Completions takes no reasoning input, so the
	// item is left out, and the header says so.
	var resp *http.Response
	az2, err := client.Responses.New(ctx, responses.ResponseNewParams{Model: "reasoner-az-rec", Reasoning: effort,
		Input: respInput(append(append([]responses.ResponseInputItemUnionParam{respUser("Think about Oslo")}, asInput(t, s.final.Output)...),
			respUser("And Rome?"))...)}, option.WithResponseInto(&resp))
	if err != nil {
		t.Fatal(err)
	}
	body = record(rc.azure, "reasoner-az-rec", az2.Usage)
	msgs := gjson.Get(body, "messages")
	if resp.Header.Get("X-Air-Dropped-Params") != "reasoning" || msgs.Get("#").Int() != 3 || msgs.Get("1.role").Str != "assistant" ||
		msgs.Get("1.reasoning_content").Exists() || strings.Contains(msgs.Raw, s.summary) || gjson.Get(body, "reasoning_effort").Str != "low" ||
		!strings.Contains(az2.OutputText(), "And Rome?") {
		t.Fatalf("azure second turn (dropped %q): sent %s, answered %s", resp.Header.Get("X-Air-Dropped-Params"), body, az2.RawJSON())
	}

	// One record per exchange, each priced on the provider's usage, which
	// the SDK was shown too; the forged turn's is the provider's 400.
	recs := waitLedger(t, "r2cloud-more", len(seen))
	for i, rec := range recs {
		x := seen[i]
		if x.model == "" {
			if rec.Outcome != "upstream_error" || rec.Status != 400 || rec.Endpoint != "responses" {
				t.Errorf("Test %d: the forged turn's record %+v", i, rec)
			}
			continue
		}
		in, out := reportedTokens(t, x.answer)
		provider, pin, pout := "aws-rec", int64(300), int64(1500) // cents per million tokens
		if strings.Contains(x.model, "az") {
			provider, pin, pout = "az-mockrec", 250, 1000
		}
		if rec.Endpoint != "responses" || rec.Outcome != "ok" || rec.Provider != provider || rec.Usage.Input != in || rec.Usage.Output != out ||
			x.in != in || x.out != out || rec.Usage.CacheRead != 0 || rec.Usage.CacheCreation != 0 {
			t.Errorf("Test %d: record %+v, the SDK saw %d/%d, %s reported %d/%d", i, rec, x.in, x.out, x.model, in, out)
		}
		checkBedrockCost(t, i, rec, new(big.Rat).SetFrac64(in*pin+out*pout, 100_000_000))
	}
}

// TestDialectAzureAnswerNamesItsModel: a translated answer from Azure
// names the model Azure reported (the deployed model's version), as a
// Chat Completions client's passed-through answer does, never the
// deployment or the client's alias; a stream's id and model come from
// the answer's chunks, not from Azure's first chunk of content filter
// results, which names neither. Each exchange is billed exactly.
func TestDialectAzureAnswerNamesItsModel(t *testing.T) {
	az := newAzureRecorder(t)
	startGateway(t, gatewayOptions{MockOptions: bedrockMock,
		Providers: fmt.Sprintf("provider az-rec {\n\t\t\tprotocol azure\n\t\t\tendpoint %s\n\t\t\tapi_key az-secret\n\t\t\tapi_version 2025-04-01-preview\n\t\t\tretries 0\n\t\t}", az.URL),
		Models:    "model gpt-az az-rec gpt-4o-prod",
		Prices:    `{"currency":"USD","models":{"gpt-az":{"tiers":[{"input":"2.5","output":"10"}]}}}`})
	key, _ := createKey(t, "az-model")
	oc, ac := openAIClient(key), anthropicClient(key)
	ctx := context.Background()
	const model = "gpt-4o-2024-11-20" // what the recorder's answers name

	chat, err := oc.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "gpt-az",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hello")}})
	if err != nil || chat.Model != model {
		t.Fatalf("passed through: %v %+v", err, chat)
	}
	r, err := oc.Responses.New(ctx, responses.ResponseNewParams{Model: "gpt-az", Input: respInput(respUser("Hello"))})
	if err != nil || r.Model != model || r.ID != "resp_az1" || r.OutputText() != "Hi from Azure" {
		t.Fatalf("responses: %v %+v", err, r)
	}
	s, err := readRespStream(t, responses.ResponseNewParams{Model: "gpt-az", Input: respInput(respUser("Hello"))}, oc)
	if err != nil || s.final.Model != model || s.final.ID != "resp_az2" || s.text != "Hi" || s.types[0] != "response.created" {
		t.Fatalf("responses stream: %v %q %s", err, s.text, s.final.RawJSON())
	}
	stream := ac.Messages.NewStreaming(ctx, anthropic.MessageNewParams{Model: "gpt-az", MaxTokens: 100,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Hello"))}})
	var msg anthropic.Message
	for stream.Next() {
		if err := msg.Accumulate(stream.Current()); err != nil {
			t.Fatal(err)
		}
	}
	if err := stream.Err(); err != nil || string(msg.Model) != model || msg.ID != "chatcmpl-az2" || msg.Content[0].Text != "Hi" {
		t.Fatalf("messages stream: %v %+v", err, msg)
	}

	// The JSON answers reported 11 and 4 tokens, the streams 9 and 1.
	recs := waitLedger(t, "az-model", 4)
	for i, want := range [][2]int64{{11, 4}, {11, 4}, {9, 1}, {9, 1}} {
		rec := recs[i]
		if rec.Outcome != "ok" || rec.Usage.Input != want[0] || rec.Usage.Output != want[1] || rec.Endpoint != []string{"chat", "responses", "responses", "messages"}[i] {
			t.Errorf("Test %d: record %+v", i, rec)
		}
		checkBedrockCost(t, i, rec, new(big.Rat).SetFrac64(want[0]*250+want[1]*1000, 100_000_000))
	}
}
