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

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
	"github.com/tidwall/gjson"
)

// failingResponsesUpstream is an Anthropic-protocol upstream that answers
// by the first user message: "429", "500", "cut" (a stream broken off),
// and "cache", an answer that read and wrote the prompt cache.
func failingResponsesUpstream(t *testing.T) *upstream {
	return newUpstream(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
		errorAnswer := func(status int, typ, msg string) {
			w.Header().Set("Content-Type", "application/json")
			if status == 429 {
				w.Header().Set("Retry-After", "9")
			}
			w.WriteHeader(status)
			_, _ = fmt.Fprintf(w, `{"type":"error","error":{"type":%q,"message":%q}}`, typ, msg)
		}
		switch gjson.GetBytes(body, "messages.0.content.0.text").Str {
		case "429":
			errorAnswer(429, "rate_limit_error", "Number of requests has exceeded your rate limit")
		case "500":
			errorAnswer(500, "api_error", "Internal server error")
		case "cut":
			sseWrite(w, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"c\",\"content\":[],\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":5,\"output_tokens\":1}}}\n\n",
				"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
				"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hel\"}}\n\n")
		case "cache":
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"id":"msg_c","type":"message","role":"assistant","model":"c","content":[{"type":"text","text":"cached"}],"stop_reason":"end_turn","stop_sequence":null,`+
				`"usage":{"input_tokens":11,"cache_creation_input_tokens":200,"cache_read_input_tokens":3000,"output_tokens":7}}`)
		}
	})
}

// TestDialectResponsesSDKErrors: a 429 with Retry-After, a 5xx and a cut
// stream of an Anthropic-protocol provider reach a Responses client in
// OpenAI's shape, each exchange one ledger record; the cache reads and
// writes of a provider's usage are billed as for a Messages request.
func TestDialectResponsesSDKErrors(t *testing.T) {
	// A 429 cools its provider down for its Retry-After: the SDK's 429
	// goes to a provider of its own.
	up, up2, up3 := failingResponsesUpstream(t), failingResponsesUpstream(t), failingResponsesUpstream(t)
	startGateway(t, gatewayOptions{
		Providers: providerBlock("rec-anth", "anthropic", "retries 0", up) + "\n" + providerBlock("rec-anth2", "anthropic", "retries 0", up2) +
			"\n" + providerBlock("rec-anth3", "anthropic", "retries 0", up3),
		Models: "model rec-claude rec-anth2\nmodel rec-claude-429 rec-anth\nmodel rec-claude-429b rec-anth3",
		Prices: `{"currency":"USD","models":{"rec-claude":{"tiers":[{"input":"3","output":"15"}],"cache":{"creation":"1.25","read":"0.1"}}}}`,
	})
	key, _ := createKey(t, "r2a-errors")
	client := openAIClient(key)
	ctx := context.Background()
	for i, tc := range []struct {
		model, sdkModel, prompt string
		status                  int
		errType                 string
		retryAfter              string
	}{
		{"rec-claude-429", "rec-claude-429b", "429", 429, "rate_limit_error", "9"},
		{"rec-claude", "rec-claude", "500", 500, "server_error", ""},
	} {
		status, hdr, body := call(t, http.MethodPost, "/v1/responses", key,
			fmt.Sprintf(`{"model":%q,"input":[{"role":"user","content":[{"type":"input_text","text":%q}]}]}`, tc.model, tc.prompt))
		if status != tc.status || gjson.GetBytes(body, "error.type").Str != tc.errType || gjson.GetBytes(body, "error.message").Str == "" ||
			hdr.Get("Retry-After") != tc.retryAfter {
			t.Errorf("Test %d: %d %v %s", i, status, hdr, body)
		}
		_, err := client.Responses.New(ctx, responses.ResponseNewParams{Model: tc.sdkModel, Input: respInput(respUser(tc.prompt))})
		var apiErr *openai.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != tc.status {
			t.Errorf("Test %d: SDK error %v", i, err)
		}
	}
	s, err := readRespStream(t, responses.ResponseNewParams{Model: "rec-claude", Input: respInput(respUser("cut"))}, client)
	// The SDK reads the failed response, then fails on the error event.
	if err == nil || s.text != "Hel" || !strings.Contains(err.Error(), "broke off") || s.finalType != "response.failed" || s.final.Status != "failed" {
		t.Fatalf("cut stream: text %q, error %v, events %q", s.text, err, s.types)
	}
	r, err := client.Responses.New(ctx, responses.ResponseNewParams{Model: "rec-claude", Input: respInput(respUser("cache"))})
	if err != nil {
		t.Fatal(err)
	}
	if r.Usage.InputTokens != 3211 || r.Usage.InputTokensDetails.CachedTokens != 3000 || r.Usage.OutputTokens != 7 {
		t.Fatalf("cached usage %s", r.Usage.RawJSON())
	}
	recs := waitLedger(t, "r2a-errors", 6)
	rec := recs[5]
	// 11×3 + 200×3×1.25 + 3000×3×0.1 + 7×15 per million tokens.
	want := new(big.Rat).SetFrac64(11*3*100+200*375+3000*30+7*15*100, 100_000_000)
	if got, ok := new(big.Rat).SetString(rec.Cost); rec.Usage.CacheRead != 3000 || rec.Usage.CacheCreation != 200 || rec.Usage.Input != 11 ||
		rec.Endpoint != "responses" || !ok || got.Cmp(want) != 0 {
		t.Errorf("cached record %+v, want cost %s", rec, want.FloatString(9))
	}
	if recs[4].Endpoint != "responses" || recs[4].Status != 200 {
		t.Errorf("cut stream record %+v", recs[4])
	}
}
