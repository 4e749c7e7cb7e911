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
	"github.com/openai/openai-go/v3"
	"github.com/tidwall/gjson"

	"github.com/caddy-air/caddy-air/dialect/vertex"
)

// TestDialectGeminiErrors: Gemini's 429 (its RetryInfo delay as
// Retry-After), 5xx, and streams cut between or inside events or ended
// by an error chunk reach each client in its own shape, each exchange
// with exactly one ledger record.
func TestDialectGeminiErrors(t *testing.T) {
	gc := newGoogleCloud(t, time.Hour)
	// Failures that would open the breakers: they stay closed, so that
	// each exchange reaches the fake.
	startGateway(t, gatewayOptions{Providers: gc.providers("min_requests 1000"), Models: googleModels, Prices: googlePrices})
	key, _ := createKey(t, "g-errors")
	oc, ac := openAIClient(key), anthropicClient(key)
	ctx := context.Background()
	n := 0
	for _, model := range []string{"gem-flash", "vtx-pro"} {
		for i, tc := range []struct {
			path, prompt string
			status       int
			errType      string
		}{
			{"/v1/chat/completions", "mock:500", 500, "server_error"},
			{"/v1/messages", "mock:500", 500, "api_error"},
			{"/v1/messages", "mock:503", 503, "overloaded_error"},
		} {
			body := fmt.Sprintf(`{"model":%q,"max_tokens":50,"messages":[{"role":"user","content":%q}]}`, model, tc.prompt)
			status, _, out := call(t, http.MethodPost, tc.path, key, body, "anthropic-version", "2023-06-01")
			if status != tc.status || gjson.GetBytes(out, "error.type").Str != tc.errType || gjson.GetBytes(out, "error.message").Str == "" {
				t.Errorf("%s test %d: %d %s", model, i, status, out)
			}
			n++
		}

		// Cut streams: the Go SDKs see an error after the text that came.
		for _, prompt := range []string{"mock:cut this long answer", "mock:cut-event this long answer", "mock:error this long answer"} {
			stream := oc.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{Model: model,
				Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(prompt)}})
			var text string
			for stream.Next() {
				if c := stream.Current(); len(c.Choices) > 0 {
					text += c.Choices[0].Delta.Content
				}
			}
			if stream.Err() == nil || !strings.HasPrefix("Mock reply to: "+prompt, text) || text == "" {
				t.Errorf("%s %q: chat stream text %q, error %v", model, prompt, text, stream.Err())
			}
			ms := ac.Messages.NewStreaming(ctx, anthropic.MessageNewParams{Model: model, MaxTokens: 100,
				Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(prompt))}})
			text = ""
			for ms.Next() {
				if ev := ms.Current(); ev.Type == "content_block_delta" {
					text += ev.Delta.Text
				}
			}
			if ms.Err() == nil || !strings.HasPrefix("Mock reply to: "+prompt, text) || text == "" {
				t.Errorf("%s %q: messages stream text %q, error %v", model, prompt, text, ms.Err())
			}
			n += 2
		}
		// Raw, a cut stream ends with the client's own error event.
		status, _, out := call(t, http.MethodPost, "/v1/messages", key,
			fmt.Sprintf(`{"model":%q,"max_tokens":50,"stream":true,"messages":[{"role":"user","content":"mock:cut here"}]}`, model), "anthropic-version", "2023-06-01")
		if status != 200 || !strings.Contains(string(out), "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":") || strings.Contains(string(out), "message_stop") {
			t.Errorf("%s: raw cut Messages stream %d:\n%s", model, status, out)
		}
		status, _, out = call(t, http.MethodPost, "/v1/chat/completions", key,
			fmt.Sprintf(`{"model":%q,"stream":true,"messages":[{"role":"user","content":"mock:cut here"}]}`, model))
		if status != 200 || !strings.Contains(string(out), `"error":{`) || strings.Contains(string(out), "[DONE]") {
			t.Errorf("%s: raw cut chat stream %d:\n%s", model, status, out)
		}
		n += 2

		// Last, as the provider then cools down: the 429, whose
		// RetryInfo delay reaches the client as Retry-After.
		status, hdr, out := call(t, http.MethodPost, "/v1/chat/completions", key,
			fmt.Sprintf(`{"model":%q,"messages":[{"role":"user","content":"mock:throttle"}]}`, model))
		if status != 429 || hdr.Get("Retry-After") != "17" || gjson.GetBytes(out, "error.message").Str == "" {
			t.Errorf("%s: 429 %v %s", model, hdr, out)
		}
		_, err := ac.Messages.New(ctx, anthropic.MessageNewParams{Model: model, MaxTokens: 10,
			Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))}})
		var apiErr *anthropic.Error
		// The provider cools down for the Retry-After it gave: the
		// gateway's 503 reached no upstream.
		if !errors.As(err, &apiErr) || apiErr.StatusCode != 503 || apiErr.Response.Header.Get("Retry-After") == "" {
			t.Errorf("%s: after the 429: %v", model, err)
		}
		n++
	}
	recs := waitLedger(t, "g-errors", n)
	for i, r := range recs {
		if r.Outcome != "upstream_error" {
			t.Errorf("Test %d: record %+v", i, r)
		}
	}
	if got := gc.gemini.count() + gc.vertex.count(); got != n {
		t.Errorf("the fakes got %d requests for %d records", got, n)
	}
}

// TestDialectVertexTokens: Vertex AI's bearer token comes from the
// service account's JWT grant at token_url, is refreshed once it expires
// (the fake refuses an expired one), and a token the fake does not trust
// fails the request.
func TestDialectVertexTokens(t *testing.T) {
	gc := newGoogleCloud(t, 2*time.Second)
	// A Vertex AI that trusts another token endpoint.
	stranger := newGoogleFake(t, vertex.NewServer(vertexProject, vertexRegion, &vertex.OAuthServer{ClientEmail: vertexEmail, PublicKey: &serviceKey().PublicKey}))
	// The key file names a token endpoint that does not exist: token_url
	// replaces it.
	creds := serviceAccountFile(t, serviceKey(), "http://127.0.0.1:9/no-token-here")
	providers := fmt.Sprintf(`provider vtx {
			protocol vertex
			base_url %s
			project %s
			region %s
			credentials_file %s
			token_url %s
			retries 0
		}
		provider vtx-stranger {
			protocol vertex
			base_url %s
			project %s
			region %s
			credentials_file %s
			retries 0
		}`, gc.vertex.URL, vertexProject, vertexRegion, creds, gc.tokenURL, stranger.URL, vertexProject, vertexRegion, gc.credentials)
	startGateway(t, gatewayOptions{Providers: providers, Models: "model vtx-pro vtx gemini-2.5-pro\n\t\tmodel vtx-stranger vtx-stranger gemini-2.5-pro"})
	key, _ := createKey(t, "vtx-tokens")
	ask := func(model string) (int, []byte) {
		status, _, out := call(t, http.MethodPost, "/v1/chat/completions", key,
			fmt.Sprintf(`{"model":%q,"messages":[{"role":"user","content":"Hello Vertex"}]}`, model))
		return status, out
	}
	if status, out := ask("vtx-pro"); status != 200 || !strings.Contains(string(out), "Mock reply to: Hello Vertex") {
		t.Fatalf("first request %d %s", status, out)
	}
	_, _, _, first := gc.vertex.last(t)
	if !strings.HasPrefix(first, "Bearer ya29.") || gc.oauth.Grants.Load() != 1 {
		t.Fatalf("first credential %q, %d grants", first, gc.oauth.Grants.Load())
	}
	time.Sleep(2500 * time.Millisecond) // the token expires
	if status, out := ask("vtx-pro"); status != 200 {
		t.Fatalf("request after the token's expiry %d %s", status, out)
	}
	_, _, _, second := gc.vertex.last(t)
	if second == first || gc.oauth.Grants.Load() < 2 {
		t.Fatalf("the expired token was not refreshed: %q then %q, %d grants", first, second, gc.oauth.Grants.Load())
	}
	// The fake refuses the expired token: the second request could not
	// have passed with it.
	req, _ := http.NewRequest(http.MethodPost, gc.vertex.URL+"/v1/projects/"+vertexProject+"/locations/"+vertexRegion+
		"/publishers/google/models/gemini-2.5-pro:generateContent", strings.NewReader(`{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`))
	req.Header.Set("Authorization", first)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("the fake took an expired token: %d", resp.StatusCode)
	}

	// A token the provider does not trust: refused, and the client gets
	// the gateway's error, not an answer.
	status, out := ask("vtx-stranger")
	_, answer, _, auth := stranger.last(t)
	if status == 200 || gjson.GetBytes(out, "error.message").Str == "" || !strings.HasPrefix(auth, "Bearer ya29.") || !strings.Contains(answer, "UNAUTHENTICATED") {
		t.Fatalf("untrusted token: %d %s (fake answered %s)", status, out, answer)
	}
	recs := waitLedger(t, "vtx-tokens", 3)
	if recs[0].Outcome != "ok" || recs[1].Outcome != "ok" || recs[2].Outcome == "ok" {
		t.Errorf("records %+v", recs)
	}
}
