package integration

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	aoption "github.com/anthropics/anthropic-sdk-go/option"
	"github.com/tidwall/gjson"
)

// TestDialectAnthropicSDKThinkingImageAndCost: thinking across two turns,
// an image input, and the ledger's exact cost of translated exchanges.
func TestDialectAnthropicSDKThinkingImageAndCost(t *testing.T) {
	startGateway(t, gatewayOptions{
		Prices: `{"currency":"USD","models":{"mock-reasoner":{"tiers":[{"input":"3","output":"15"}]},"mock-gpt":{"tiers":[{"input":"1","output":"2"}]}}}`,
	})
	key, _ := createKey(t, "a2o-think")
	client := anthropicClient(key)
	ctx := context.Background()

	q := anthropic.NewUserMessage(anthropic.NewTextBlock("Think about Oslo"))
	stream := client.Messages.NewStreaming(ctx, anthropic.MessageNewParams{
		Model: "mock-reasoner", MaxTokens: 4096, Thinking: anthropic.ThinkingConfigParamOfEnabled(1024),
		Messages: []anthropic.MessageParam{q},
	})
	var first anthropic.Message
	for stream.Next() {
		if err := first.Accumulate(stream.Current()); err != nil {
			t.Fatal(err)
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if len(first.Content) != 2 || first.Content[0].Type != "thinking" || first.Content[0].Thinking == "" || first.Content[1].Type != "text" {
		t.Fatalf("first turn %+v", first.Content)
	}
	var resp *http.Response
	second, err := client.Messages.New(ctx, anthropic.MessageNewParams{
		Model: "mock-reasoner", MaxTokens: 4096, Thinking: anthropic.ThinkingConfigParamOfEnabled(1024),
		Messages: []anthropic.MessageParam{q, first.ToParam(), anthropic.NewUserMessage(anthropic.NewTextBlock("And Rome?"))},
	}, aoption.WithResponseInto(&resp))
	if err != nil {
		t.Fatal(err)
	}
	if len(second.Content) != 2 || second.Content[0].Type != "thinking" || !strings.Contains(second.Content[1].Text, "Rome") {
		t.Fatalf("second turn %+v", second.Content)
	}
	// The unsigned reasoning of the first turn cannot go back to a Chat
	// Completions provider: the answer says it was left out.
	if got := resp.Header.Get("X-Air-Dropped-Params"); got != "thinking" {
		t.Errorf("X-Air-Dropped-Params %q", got)
	}

	plain, err := client.Messages.New(ctx, anthropic.MessageNewParams{
		Model: "mock-gpt", MaxTokens: 256,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("What is this?"))},
	})
	if err != nil {
		t.Fatal(err)
	}
	img, err := client.Messages.New(ctx, anthropic.MessageNewParams{
		Model: "mock-gpt", MaxTokens: 256,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("What is this?"),
			anthropic.NewImageBlockBase64("image/png", "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="))},
	})
	if err != nil {
		t.Fatal(err)
	}
	// The mock counts an image's tokens: it received the image.
	if img.Usage.InputTokens <= plain.Usage.InputTokens || img.Content[0].Text == "" {
		t.Fatalf("image answer %+v (input %d, without the image %d)", img.Content, img.Usage.InputTokens, plain.Usage.InputTokens)
	}

	// One record per exchange, priced on the usage the client was shown:
	// input×price + output×price per million tokens.
	recs := waitLedger(t, "a2o-think", 4)
	shown := []anthropic.Usage{first.Usage, second.Usage, plain.Usage, img.Usage}
	prices := [][2]int64{{3, 15}, {3, 15}, {1, 2}, {1, 2}}
	for i, r := range recs {
		u := shown[i]
		if r.Usage.Input != u.InputTokens || r.Usage.Output != u.OutputTokens || r.Usage.CacheRead != u.CacheReadInputTokens || !r.Priced || r.Endpoint != "messages" {
			t.Errorf("Test %d: record %+v, client shown %+v", i, r, u)
			continue
		}
		want := new(big.Rat).SetFrac64(u.InputTokens*prices[i][0]+u.OutputTokens*prices[i][1], 1_000_000)
		if got, ok := new(big.Rat).SetString(r.Cost); !ok || got.Cmp(want) != 0 {
			t.Errorf("Test %d: cost %s, want %s", i, r.Cost, want.FloatString(9))
		}
	}
}

// failingChat is an OpenAI-protocol upstream that answers by the request's
// first user message: "429", "500", "cut" (a stream broken off after two
// chunks), else a short answer.
func failingChat(t *testing.T) *upstream {
	return newUpstream(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
		switch gjson.GetBytes(body, "messages.0.content").String() {
		case "429":
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Retry-After", "7")
			w.WriteHeader(http.StatusTooManyRequests)
			_, _ = io.WriteString(w, `{"error":{"message":"Rate limit reached for requests","type":"requests","param":null,"code":"rate_limit_exceeded"}}`)
		case "500":
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusInternalServerError)
			_, _ = io.WriteString(w, `{"error":{"message":"The server had an error","type":"server_error","param":null,"code":null}}`)
		case "cut":
			sseWrite(w,
				`data: {"id":"c1","object":"chat.completion.chunk","model":"rec-gpt","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`+"\n\n",
				`data: {"id":"c1","object":"chat.completion.chunk","model":"rec-gpt","choices":[{"index":0,"delta":{"content":"Hel"},"finish_reason":null}]}`+"\n\n")
		}
	})
}

// TestDialectAnthropicSDKErrors: a 429 (with its Retry-After), a 5xx and a
// cut stream of an OpenAI-protocol provider reach an Anthropic client in
// Anthropic's shape, each exchange with one ledger record.
func TestDialectAnthropicSDKErrors(t *testing.T) {
	// Two upstreams: the one that answered 429 cools down for its
	// Retry-After.
	up, up2 := failingChat(t), failingChat(t)
	startGateway(t, gatewayOptions{
		Providers: providerBlock("rec-openai", "openai", "retries 0", up) + "\n" + providerBlock("rec-openai2", "openai", "retries 0", up2),
		Models:    "model rec-gpt rec-openai\nmodel rec-gpt2 rec-openai2",
	})
	key, _ := createKey(t, "a2o-errors")
	for i, tc := range []struct {
		model, prompt string
		status        int
		errType       string
		retryAfter    string
	}{
		{"rec-gpt", "429", 429, "rate_limit_error", "7"},
		{"rec-gpt2", "500", 500, "api_error", ""},
		// The upstream that answered 429 is cooling down: the gateway's
		// own 503, in Anthropic's shape too.
		{"rec-gpt", "429", 503, "overloaded_error", "7"},
	} {
		status, hdr, body := call(t, http.MethodPost, "/v1/messages", key,
			fmt.Sprintf(`{"model":%q,"max_tokens":10,"messages":[{"role":"user","content":%q}]}`, tc.model, tc.prompt), "anthropic-version", "2023-06-01")
		if status != tc.status || gjson.GetBytes(body, "type").Str != "error" || gjson.GetBytes(body, "error.type").Str != tc.errType ||
			gjson.GetBytes(body, "error.message").Str == "" || hdr.Get("Retry-After") != tc.retryAfter {
			t.Errorf("Test %d: %d %v %s", i, status, hdr, body)
		}
	}
	client := anthropicClient(key)
	_, err := client.Messages.New(context.Background(), anthropic.MessageNewParams{Model: "rec-gpt2", MaxTokens: 10,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("500"))}})
	var apiErr *anthropic.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 500 {
		t.Fatalf("SDK error %v", err)
	}
	stream := client.Messages.NewStreaming(context.Background(), anthropic.MessageNewParams{Model: "rec-gpt2", MaxTokens: 10,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("cut"))}})
	var text string
	for stream.Next() {
		if ev := stream.Current(); ev.Type == "content_block_delta" {
			text += ev.Delta.Text
		}
	}
	if stream.Err() == nil || text != "Hel" {
		t.Fatalf("cut stream: text %q, error %v", text, stream.Err())
	}
	// Raw, the cut stream ends with Anthropic's error event.
	status, _, body := call(t, http.MethodPost, "/v1/messages", key,
		`{"model":"rec-gpt2","max_tokens":10,"stream":true,"messages":[{"role":"user","content":"cut"}]}`, "anthropic-version", "2023-06-01")
	if !strings.HasSuffix(string(body), "\n\n") || !strings.Contains(string(body), "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":") ||
		strings.Contains(string(body), "message_stop") || status != 200 {
		t.Fatalf("cut stream %d:\n%s", status, body)
	}
	// 429, 500, 500 by the SDK, two cut streams; the 503 reached no
	// upstream.
	recs := waitLedger(t, "a2o-errors", 5)
	for i, r := range recs {
		if r.Endpoint != "messages" || r.Outcome != "upstream_error" {
			t.Errorf("Test %d: record %+v", i, r)
		}
	}
}

// TestDialectUnsupportedParams: a parameter the provider cannot honour is
// refused with a 400 naming it, or dropped under drop_params and listed in
// X-Air-Dropped-Params.
func TestDialectUnsupportedParams(t *testing.T) {
	startGateway(t, gatewayOptions{Models: "model mock-gpt-lax mock mock-gpt {\n\t\t\tdrop_params\n\t\t}"})
	key, _ := createKey(t, "a2o-params")
	body := `{"model":"%s","max_tokens":10,"service_tier":"auto","messages":[{"role":"user","content":"hi"}]}`
	status, _, out := call(t, http.MethodPost, "/v1/messages", key, fmt.Sprintf(body, "mock-gpt"), "anthropic-version", "2023-06-01")
	if status != 400 || gjson.GetBytes(out, "error.type").Str != "invalid_request_error" || !strings.Contains(gjson.GetBytes(out, "error.message").Str, `"service_tier"`) {
		t.Fatalf("not refused: %d %s", status, out)
	}
	status, hdr, out := call(t, http.MethodPost, "/v1/messages", key, fmt.Sprintf(body, "mock-gpt-lax"), "anthropic-version", "2023-06-01")
	if status != 200 || hdr.Get("X-Air-Dropped-Params") != "service_tier" || gjson.GetBytes(out, "type").Str != "message" {
		t.Fatalf("not dropped: %d %v %s", status, hdr, out)
	}
	waitLedger(t, "a2o-params", 1) // the refused request reached no provider
}

// TestDialectMixedFallbacks: a model falls back on a model of the other
// protocol, reached translated; the ledger names the model that served.
func TestDialectMixedFallbacks(t *testing.T) {
	down := newUpstream(t, func(w http.ResponseWriter, r *http.Request, _ []byte) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = io.WriteString(w, `{"error":{"message":"down","type":"server_error"}}`)
	})
	startGateway(t, gatewayOptions{
		Providers: providerBlock("down-anth", "anthropic", "retries 0", down) + "\n" + providerBlock("down-oa", "openai", "retries 0", down),
		Models: "model claude-primary down-anth {\n\t\t\tfallback mock-gpt\n\t\t}\n" +
			"\t\tmodel gpt-primary down-oa {\n\t\t\tfallback mock-claude\n\t\t}",
	})
	key, _ := createKey(t, "mixed")
	// A Messages client: its own protocol first (passed through), then a
	// chat model, translated.
	client := anthropicClient(key)
	m, err := client.Messages.New(context.Background(), anthropic.MessageNewParams{
		Model: "claude-primary", MaxTokens: 100,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Hello fallback"))},
	})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(m.Content[0].Text, "Hello fallback") || m.Model != "mock-gpt" || m.Usage.OutputTokens == 0 {
		t.Fatalf("message %+v", m)
	}
	// A Chat Completions client, streaming, the other way round.
	status, _, body := call(t, http.MethodPost, "/v1/chat/completions", key,
		`{"model":"gpt-primary","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"Hello again"}]}`)
	if status != 200 || !strings.Contains(string(body), `"content":"`) || !strings.HasSuffix(string(body), "data: [DONE]\n\n") ||
		!strings.Contains(string(body), `"finish_reason":"stop"`) {
		t.Fatalf("stream %d:\n%s", status, body)
	}
	if down.hits.Load() != 2 {
		t.Errorf("the primaries were tried %d times, want 2", down.hits.Load())
	}
	recs := waitLedger(t, "mixed", 2)
	for i, want := range []struct{ endpoint, served, provider string }{{"messages", "mock-gpt", "mock"}, {"chat", "mock-claude", "mock-anthropic"}} {
		if r := recs[i]; r.Endpoint != want.endpoint || r.ServedModel != want.served || r.Provider != want.provider || r.Outcome != "ok" || r.Usage.Output == 0 {
			t.Errorf("Test %d: record %+v", i, r)
		}
	}
}
