package integration

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
)

// mockGoogleProvider is a provider block of the mock's fake Gemini
// (protocol gemini, with its API key) or Vertex (protocol vertex, signing
// with the service account sa) whose breaker no test opens.
func mockGoogleProvider(name, protocol, sa string) string {
	auth := "api_key mock-upstream-key"
	if protocol == "vertex" {
		auth = "project mock-project\n\t\t\tregion us-central1\n\t\t\tcredentials_file " + sa
	}
	return "provider " + name + " {\n\t\t\tprotocol " + protocol + "\n\t\t\tbase_url http://localhost:9080/mock\n\t\t\t" + auth +
		"\n\t\t\tretries 0\n\t\t\tmin_requests 1000\n\t\t}"
}

// TestDialectResponsesSDKCloudErrors: the 5xx, cut streams and (for
// Gemini and Vertex) the 429 of a gemini, a vertex, a bedrock and an
// azure provider reach the OpenAI SDK's Responses client as its own
// errors: an API error with the provider's status (and Retry-After),
// and a stream that ends in response.failed then an error event, after
// the text that came before the cut. Each exchange leaves one record.
func TestDialectResponsesSDKCloudErrors(t *testing.T) {
	sa := serviceAccountFile(t, serviceKey(), "http://localhost:9080/mock/token")
	az := newAzureRecorder(t)
	// Providers of their own: a 429 takes a provider's key out of
	// rotation, and that state outlives a test's config.
	bedrock := "provider aws-r2e {\n\t\t\tprotocol bedrock\n\t\t\tregion us-east-1\n\t\t\tbase_url http://localhost:9080/mock/bedrock\n" +
		"\t\t\taccess_key_id AKIDMOCKBEDROCK\n\t\t\tsecret_access_key mock-bedrock-secret\n\t\t\tretries 0\n\t\t\tmin_requests 1000\n\t\t}"
	azure := fmt.Sprintf("provider az-r2e {\n\t\t\tprotocol azure\n\t\t\tendpoint %s\n\t\t\tapi_key az-secret\n\t\t\tapi_version 2025-04-01-preview\n\t\t\tretries 0\n\t\t\tmin_requests 1000\n\t\t}", az.URL)
	startGateway(t, gatewayOptions{
		MockOptions: "vertex_service_account " + sa + "\n\t\t\t" + bedrockMock,
		Providers: mockGoogleProvider("gem-r2e", "gemini", sa) + "\n\t\t" + mockGoogleProvider("vtx-r2e", "vertex", sa) + "\n\t\t" +
			bedrock + "\n\t\t" + azure,
		Models: "model gem-r2e gem-r2e gemini-2.5-flash\n\t\tmodel vtx-r2e vtx-r2e gemini-2.5-pro\n\t\t" +
			"model claude-r2e aws-r2e anthropic.claude-3-7-sonnet-20250219-v1:0\n\t\tmodel gpt-r2e az-r2e gpt-4o-prod",
	})
	key, _ := createKey(t, "r2cloud-errors")
	client := openAIClient(key)
	failed := func(model, prompt string, status int, retryAfter string) {
		t.Helper()
		_, err := client.Responses.New(context.Background(), responses.ResponseNewParams{Model: model, Input: respInput(respUser(prompt))})
		var apiErr *openai.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != status || apiErr.Message == "" || apiErr.Response.Header.Get("Retry-After") != retryAfter {
			t.Errorf("%s %s: want a %d (Retry-After %q), got %v", model, prompt, status, retryAfter, err)
		}
	}
	cut := func(model, prompt, before string) {
		t.Helper()
		s, err := readRespStream(t, responses.ResponseNewParams{Model: model, Input: respInput(respUser(prompt))}, client)
		// The SDK reads the failed response, then fails on the error event.
		if err == nil || !strings.HasPrefix(s.text, before) || s.text == "" || s.finalType != "response.failed" || s.final.Status != "failed" {
			t.Errorf("%s %s: text %q, error %v, events %q", model, prompt, s.text, err, s.types)
		}
	}
	for _, model := range []string{"gem-r2e", "vtx-r2e"} {
		failed(model, "mock:500", 500, "")
		failed(model, "mock:503", 503, "")
		cut(model, "mock:cut", "Mock reply to: ")
		cut(model, "mock:cut-event", "Mock reply to: ")
		// The provider's RetryInfo delay is the client's Retry-After.
		failed(model, "mock:throttle", 429, "17")
	}
	failed("claude-r2e", "mock:500", 500, "")
	failed("claude-r2e", "mock:503", 503, "")
	cut("claude-r2e", "mock:cut-between", "Mock")
	cut("claude-r2e", "mock:cut-frame", "Mock")
	failed("gpt-r2e", "500", 500, "")
	cut("gpt-r2e", "cut", "Hel")

	recs := waitLedger(t, "r2cloud-errors", 2*5+4+2)
	for i, r := range recs {
		if r.Endpoint != "responses" || r.Outcome != "upstream_error" {
			t.Errorf("Test %d: record %+v", i, r)
		}
	}
}
