package integration

import (
	"context"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
	"github.com/tidwall/gjson"

	"github.com/caddy-air/caddy-air/dialect/azure"
)

// TestDialectAzureEntraManagedIdentity: an azure provider with entra
// managed_identity (here App Service's managed identity endpoint, a fake
// Entra ID) sends a bearer token, got once and reused, and no api-key,
// to a resource that takes Entra ID tokens only, for each client
// protocol; a token the resource refuses, and a token endpoint that
// refuses the gateway, fail the request with the gateway's 503, each with
// its record. Each answer is billed exactly.
func TestDialectAzureEntraManagedIdentity(t *testing.T) {
	entra := &azure.EntraServer{TenantID: "tenant-1", Header: "identity-header-secret"}
	msi := httptest.NewServer(entra)
	t.Cleanup(msi.Close)
	t.Setenv("IDENTITY_ENDPOINT", msi.URL+"/msi/token")
	t.Setenv("IDENTITY_HEADER", "identity-header-secret")
	// The resource: Azure's front taking entra's tokens only, in front of
	// canned Azure answers (11 and 4 tokens; a stream 9 and 1).
	canned := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if gjson.GetBytes(body, "stream").Bool() {
			sseWrite(w, azureStream)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, azureAnswer)
	})
	res := newGoogleFake(t, &azure.Front{Bearer: entra.Valid, Next: canned})
	distrustful := newGoogleFake(t, &azure.Front{Bearer: func(string) bool { return false }, Next: canned})
	// (Tokens are cached per identity across the process, as azidentity
	// does: the provider whose token endpoint fails has an identity of its
	// own.)
	provider := func(name, url, identity string) string {
		return fmt.Sprintf("provider %s {\n\t\t\tprotocol azure\n\t\t\tendpoint %s\n\t\t\tapi_version 2025-04-01-preview\n\t\t\tretries 0\n"+
			"\t\t\tentra {\n\t\t\t\tmanaged_identity\n\t\t\t\tclient_id %s\n\t\t\t}\n\t\t}", name, url, identity)
	}
	startGateway(t, gatewayOptions{
		Providers: provider("az-entra", res.URL, "uami-1") + "\n\t\t" + provider("az-distrust", distrustful.URL, "uami-1") + "\n\t\t" + provider("az-no-token", res.URL, "uami-2"),
		Models:    "model gpt-entra az-entra gpt-4o-prod\n\t\tmodel gpt-distrust az-distrust gpt-4o-prod\n\t\tmodel gpt-no-token az-no-token gpt-4o-prod",
		Prices:    `{"currency":"USD","models":{"gpt-*":{"tiers":[{"input":"2.5","output":"10"}]}}}`})
	key, _ := createKey(t, "az-entra")
	oc, ac := openAIClient(key), anthropicClient(key)
	ctx := context.Background()
	bearer := func(f *googleFake) string {
		t.Helper()
		_, _, path, auth := f.last(t)
		if !strings.HasPrefix(path, "/openai/deployments/gpt-4o-prod/chat/completions?api-version=2025-04-01-preview") {
			t.Errorf("path %s", path)
		}
		return auth
	}

	chat, err := oc.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "gpt-entra",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hello")}})
	if err != nil || chat.Choices[0].Message.Content != "Hi from Azure" {
		t.Fatalf("chat: %v %+v", err, chat)
	}
	first := bearer(res)
	if !strings.HasPrefix(first, "Bearer entra-") || !entra.Valid(strings.TrimPrefix(first, "Bearer ")) {
		t.Fatalf("credential sent: %q", first)
	}
	stream := oc.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{Model: "gpt-entra",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hello")}})
	acc := openai.ChatCompletionAccumulator{}
	for stream.Next() {
		acc.AddChunk(stream.Current())
	}
	if err := stream.Err(); err != nil || acc.Choices[0].Message.Content != "Hi" {
		t.Fatalf("chat stream: %v %+v", err, acc.Choices)
	}
	msg, err := ac.Messages.New(ctx, anthropic.MessageNewParams{Model: "gpt-entra", MaxTokens: 100,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Hello"))}})
	if err != nil || msg.Content[0].Text != "Hi from Azure" {
		t.Fatalf("messages: %v %+v", err, msg)
	}
	r, err := oc.Responses.New(ctx, responses.ResponseNewParams{Model: "gpt-entra", Input: respInput(respUser("Hello"))})
	if err != nil || r.OutputText() != "Hi from Azure" {
		t.Fatalf("responses: %v %+v", err, r)
	}
	if last := bearer(res); last != first || entra.Granted.Load() != 1 {
		t.Errorf("the token was not reused: %q then %q, %d granted", first, last, entra.Granted.Load())
	}

	// A token the resource refuses: the gateway's error, not an answer.
	status, _, out := call(t, http.MethodPost, "/v1/chat/completions", key, `{"model":"gpt-distrust","messages":[{"role":"user","content":"Hello"}]}`)
	_, answer, _, auth := distrustful.last(t)
	if status != http.StatusServiceUnavailable || gjson.GetBytes(out, "error.message").Str == "" || !strings.HasPrefix(auth, "Bearer entra-") || !strings.Contains(answer, "Access token") {
		t.Errorf("refused token: %d %s (the resource answered %s)", status, out, answer)
	}
	// The token endpoint refusing the gateway: nothing is sent.
	t.Setenv("IDENTITY_HEADER", "not-the-header")
	before := res.count()
	status, _, out = call(t, http.MethodPost, "/v1/chat/completions", key, `{"model":"gpt-no-token","messages":[{"role":"user","content":"Hello"}]}`)
	if status != http.StatusServiceUnavailable || gjson.GetBytes(out, "error.message").Str == "" || res.count() != before || strings.Contains(string(out), "identity-header") {
		t.Errorf("no token: %d %s, %d requests reached the resource", status, out, res.count()-before)
	}

	recs := waitLedger(t, "az-entra", 6)
	for i, want := range [][2]int64{{11, 4}, {9, 1}, {11, 4}, {11, 4}} {
		rec := recs[i]
		if rec.Outcome != "ok" || rec.Provider != "az-entra" || rec.Usage.Input != want[0] || rec.Usage.Output != want[1] {
			t.Errorf("Test %d: record %+v", i, rec)
		}
		checkBedrockCost(t, i, rec, new(big.Rat).SetFrac64(want[0]*250+want[1]*1000, 100_000_000))
	}
	// The refused token and the missing one: the provider is unavailable
	// to the request (503), as a Vertex AI provider whose token fails.
	for i, p := range []string{"az-distrust", "az-no-token"} {
		if rec := recs[4+i]; rec.Outcome != "unavailable" || rec.Provider != p || rec.Status != http.StatusServiceUnavailable {
			t.Errorf("%s: record %+v", p, rec)
		}
	}
}
