package mockprovider

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
	"github.com/tidwall/gjson"

	"github.com/caddy-air/caddy-air/dialect/azure"
	"github.com/caddy-air/caddy-air/dialect/bedrock"
)

// stripped serves h under prefix as Caddy's handle_path does: the mock
// sees the path without it, and OriginalPath gives it back.
func stripped(t *testing.T, prefix string, c Config) *httptest.Server {
	t.Helper()
	c.OriginalPath = func(r *http.Request) string { return r.Header.Get("X-Test-Original-Path") }
	h := New(c)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Header.Set("X-Test-Original-Path", r.URL.Path)
		p, ok := strings.CutPrefix(r.URL.Path, prefix)
		rp, _ := strings.CutPrefix(r.URL.RawPath, prefix)
		if !ok {
			http.NotFound(w, r)
			return
		}
		r.URL.Path, r.URL.RawPath = p, rp
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestMockBedrock: the mounted fake Bedrock, under a stripped prefix,
// checks the signature over the path the client signed, and streams
// ConverseStream's binary frames.
func TestMockBedrock(t *testing.T) {
	srv := stripped(t, "/mock", Config{APIKey: testKey, Bedrock: &BedrockConfig{Region: "us-east-1", AccessKeyID: "AKIDMOCK", SecretAccessKey: "mock-secret"}})
	for i, tc := range []struct {
		secret string
		stream bool
		status int
	}{
		{"mock-secret", false, 200},
		{"mock-secret", true, 200},
		{"wrong-secret", false, 403},
		{"wrong-secret", true, 403},
	} {
		signer, err := bedrock.NewSigner("us-east-1", bedrock.StaticCredentials("AKIDMOCK", tc.secret, ""))
		if err != nil {
			t.Fatal(err)
		}
		ep := &bedrock.Endpoint{BaseURL: srv.URL + "/mock/bedrock", Signer: signer}
		req, err := ep.NewRequest(t.Context(), "anthropic.claude-3-5-sonnet-20240620-v1:0", tc.stream, []byte(`{"messages":[{"role":"user","content":[{"text":"Hello Bedrock"}]}]}`))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.status {
			t.Errorf("Test %d: %d %s", i, resp.StatusCode, b)
			continue
		}
		switch {
		case tc.status != 200:
			if !strings.HasPrefix(resp.Header.Get("X-Amzn-Errortype"), "InvalidSignatureException") || !strings.Contains(gjson.GetBytes(b, "message").Str, "signature") {
				t.Errorf("Test %d: error %v %s", i, resp.Header, b)
			}
		case tc.stream:
			dec := eventstream.NewDecoder()
			var text string
			r := strings.NewReader(string(b))
			for r.Len() > 0 {
				m, err := dec.Decode(r, nil)
				if err != nil {
					t.Fatalf("Test %d: %v", i, err)
				}
				text += gjson.GetBytes(m.Payload, "delta.text").Str
			}
			if text != "Mock reply to: Hello Bedrock" || resp.Header.Get("Content-Type") != bedrock.StreamContentType {
				t.Errorf("Test %d: streamed %q", i, text)
			}
		default:
			if gjson.GetBytes(b, "output.message.content.0.text").Str != "Mock reply to: Hello Bedrock" {
				t.Errorf("Test %d: answer %s", i, b)
			}
		}
	}
	// Without the fake, the path is the mock's unknown URL.
	plain := stripped(t, "/mock", Config{APIKey: testKey})
	if status, _, _ := post(t, plain.URL+"/mock/bedrock/model/x/converse", `{}`); status != 404 {
		t.Errorf("unmounted fake: %d", status)
	}
}

// TestMockAzure: the mounted Azure front checks the api-key (and the
// deployment path's api-version) and answers as the mock's chat
// completions, on both paths.
func TestMockAzure(t *testing.T) {
	srv := stripped(t, "/mock", Config{APIKey: testKey, AzureKey: "azure-key"})
	for i, tc := range []struct {
		v1     bool
		key    string
		status int
	}{
		{false, "azure-key", 200},
		{true, "azure-key", 200},
		{false, testKey, 401},
		{true, "", 401},
	} {
		ep := &azure.Endpoint{URL: srv.URL + "/mock/azure", Key: tc.key, V1: tc.v1}
		req, err := ep.NewRequest(t.Context(), "gpt-4o-prod", false, []byte(`{"model":"gpt-4o-prod","messages":[{"role":"user","content":"Hello Azure"}]}`))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.status {
			t.Errorf("Test %d: %d %s", i, resp.StatusCode, b)
			continue
		}
		if tc.status == 200 && (!strings.Contains(gjson.GetBytes(b, "choices.0.message.content").Str, "Hello Azure") || gjson.GetBytes(b, "usage.prompt_tokens").Int() == 0) {
			t.Errorf("Test %d: answer %s", i, b)
		}
		if tc.status != 200 && gjson.GetBytes(b, "error.code").Str != "401" {
			t.Errorf("Test %d: error %s", i, b)
		}
	}
}
