package mockprovider

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

func TestRouting(t *testing.T) {
	srv := httptest.NewServer(New(Config{}))
	t.Cleanup(srv.Close)
	chat := `{"model":"m","messages":[{"role":"user","content":"hi"}]}`
	for i, tc := range []struct {
		method, path string
		status       int
		code         string
	}{
		{http.MethodPost, "/v1/chat/completions", http.StatusOK, ""},
		{http.MethodPost, "/mock/v1/chat/completions", http.StatusOK, ""},
		{http.MethodPost, "/a/b/v1/chat/completions", http.StatusOK, ""},
		{http.MethodPost, "/v1/unknown", http.StatusNotFound, "unknown_url"},
		{http.MethodPost, "/chat/completions", http.StatusNotFound, "unknown_url"},
		{http.MethodGet, "/", http.StatusNotFound, "unknown_url"},
		{http.MethodGet, "/v1/chat/completions", http.StatusMethodNotAllowed, "method_not_allowed"},
		{http.MethodGet, "/v1/models/mock-gpt", http.StatusOK, ""},
		{http.MethodGet, "/v1/models/no-such-model", http.StatusNotFound, "model_not_found"},
	} {
		status, _, body := do(t, tc.method, srv.URL+tc.path, "application/json", chat)
		if status != tc.status || gjson.Get(body, "error.code").Str != tc.code {
			t.Errorf("Test %d: %s %s: status %d, body %s", i, tc.method, tc.path, status, body)
		}
	}
}

func TestAPIKey(t *testing.T) {
	base := newServer(t, Config{APIKey: "secret"})
	chat := `{"model":"m","messages":[{"role":"user","content":"hi"}]}`
	msg := `{"model":"m","max_tokens":8,"messages":[{"role":"user","content":"hi"}]}`
	for i, tc := range []struct {
		path, body string
		header     []string
		status     int
		anthropic  bool
	}{
		{"/chat/completions", chat, []string{"Authorization", "Bearer secret"}, http.StatusOK, false},
		{"/chat/completions", chat, []string{"Authorization", ""}, http.StatusUnauthorized, false},
		{"/chat/completions", chat, []string{"Authorization", "Bearer wrong"}, http.StatusUnauthorized, false},
		{"/chat/completions", chat, []string{"Authorization", "", "X-Api-Key", "secret"}, http.StatusOK, false},
		{"/messages", msg, []string{"Authorization", "", "X-Api-Key", "secret", "Anthropic-Version", anthropicVersion}, http.StatusOK, true},
		{"/messages", msg, []string{"Authorization", "", "Anthropic-Version", anthropicVersion}, http.StatusUnauthorized, true},
		{"/images/generations", `{"prompt":"x"}`, []string{"Authorization", "Bearer nope"}, http.StatusUnauthorized, false},
		{"/videos", `{"prompt":"x"}`, []string{"Authorization", ""}, http.StatusUnauthorized, false},
	} {
		status, _, body := post(t, base+tc.path, tc.body, tc.header...)
		if status != tc.status {
			t.Errorf("Test %d: %s: status %d, want %d; body %s", i, tc.path, status, tc.status, body)
			continue
		}
		if status != http.StatusUnauthorized {
			continue
		}
		e := gjson.Parse(body)
		if tc.anthropic && (e.Get("type").Str != "error" || e.Get("error.type").Str != "authentication_error") {
			t.Errorf("Test %d: Anthropic error shape expected: %s", i, body)
		}
		if !tc.anthropic && (e.Get("error.code").Str != "invalid_api_key" || e.Get("error.type").Str == "") {
			t.Errorf("Test %d: OpenAI error shape expected: %s", i, body)
		}
	}
}

func TestModels(t *testing.T) {
	base := newServer(t, Config{})
	_, _, body := do(t, http.MethodGet, base+"/models", "", "")
	if gjson.Get(body, "object").Str != "list" || gjson.Get(body, "data.0.object").Str != "model" || !strings.Contains(body, `"mock-gpt"`) {
		t.Errorf("OpenAI models %s", body)
	}
	_, _, body = do(t, http.MethodGet, base+"/models", "", "", "Anthropic-Version", anthropicVersion)
	if gjson.Get(body, "data.0.type").Str != "model" || !gjson.Get(body, "has_more").Exists() || gjson.Get(body, "first_id").Str == "" {
		t.Errorf("Anthropic models %s", body)
	}
}

func TestAppendString(t *testing.T) {
	for i, tc := range []struct{ in, want string }{
		{"plain", `"plain"`},
		{"quote \" and \\ backslash", `"quote \" and \\ backslash"`},
		{"line\nbreak\ttab\r\x01", `"line\nbreak\ttab\r\u0001"`},
		{"héllo 世界", `"héllo 世界"`},
		{"bad \xff byte", `"bad \ufffd byte"`},
	} {
		if got := string(appendString(nil, tc.in)); got != tc.want {
			t.Errorf("Test %d: got %s, want %s", i, got, tc.want)
		}
	}
}
