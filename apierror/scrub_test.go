package apierror

import (
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

func TestScrub(t *testing.T) {
	for i, tc := range []struct {
		in, want string
	}{
		{"Rate limit reached for gpt-4o in organization org-AbC123xyz789 on tokens per min (TPM)",
			"Rate limit reached for gpt-4o in organization [redacted] on tokens per min (TPM)"},
		{"Project `proj_9fKq2LmNoP3r` does not have access to model `gpt-5`",
			"Project `[redacted]` does not have access to model `gpt-5`"},
		{"Incorrect API key provided: sk-proj-abc1***********************wxyz. You can find your API key at https://platform.openai.com/account/api-keys.",
			"Incorrect API key provided: [redacted]. You can find your API key at https://platform.openai.com/account/api-keys."},
		{"invalid x-api-key sk-ant-api03-AAAABBBBCCCCDDDD", "invalid x-api-key [redacted]"},
		{"key ending in ****1234 was revoked", "key ending in [redacted] was revoked"},
		{"could not reach https://bob:hunter2@upstream.internal/v1", "could not reach https://[redacted]@upstream.internal/v1"},
		{"GET https://gen.example/v1beta/models?key=AIzaSyA-1234567890abcdefghijkl failed", "GET https://gen.example/v1beta/models?key=[redacted] failed"},
		{"header was Bearer abc.def-ghi", "header was [redacted]"},
		{"The key mock-upstream-key was refused", "The key [redacted] was refused"},
		{"AccessKeyId AKIAIOSFODNN7EXAMPLE is not valid", "AccessKeyId [redacted] is not valid"},
		// What must stay: model names, task ids, ordinary words.
		{"The model `gpt-4o-mini` does not exist; task-abcdefghij failed", "The model `gpt-4o-mini` does not exist; task-abcdefghij failed"},
	} {
		if got := Scrub(tc.in, "mock-upstream-key"); got != tc.want {
			t.Errorf("Test %d: Scrub(%q)\n got %q\nwant %q", i, tc.in, got, tc.want)
		}
	}
}

func TestUpstreamBody(t *testing.T) {
	for i, tc := range []struct {
		status    int
		body      string
		anthropic bool
		// want are gjson paths and their values in the client's body.
		want map[string]string
		// gone are strings the client must not see.
		gone []string
	}{
		{403, `{"error":{"message":"Project proj_abcdef123456 does not have access to model gpt-5","type":"invalid_request_error","param":null,"code":"model_not_found","organization":"org-SECRETSECRET"}}`, false,
			map[string]string{"error.message": "Project [redacted] does not have access to model gpt-5", "error.type": "invalid_request_error",
				"error.code": "model_not_found", "error.param": ""},
			[]string{"proj_", "org-", "organization"}},
		{429, `{"error":{"message":"Rate limit reached in organization org-AbC123xyz789","type":"requests","param":"model","code":"rate_limit_exceeded"}}`, false,
			map[string]string{"error.message": "Rate limit reached in organization [redacted]", "error.type": "requests", "error.param": "model", "error.code": "rate_limit_exceeded"},
			[]string{"org-AbC"}},
		{401, `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key sk-ant-api03-XYZXYZXYZ"},"request_id":"req_011"}`, true,
			map[string]string{"type": "error", "error.type": "authentication_error", "error.message": "invalid x-api-key [redacted]", "request_id": "req_011"},
			[]string{"sk-ant"}},
		// An OpenAI-shaped answer to an Anthropic client, and back.
		{403, `{"error":{"message":"no access","type":"permission_error","code":"Model.AccessDenied"}}`, true,
			map[string]string{"type": "error", "error.type": "permission_error", "error.message": "no access"}, nil},
		{529, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, false,
			map[string]string{"error.type": "overloaded_error", "error.message": "Overloaded"}, nil},
		// The fields at the top level, as DashScope answers.
		{403, `{"request_id":"abc","code":"Model.AccessDenied","message":"Model access denied for workspace ws-1 key sk-0123456789abcdef"}`, false,
			map[string]string{"error.code": "Model.AccessDenied", "error.message": "Model access denied for workspace ws-1 key [redacted]", "error.type": "invalid_request_error"},
			[]string{"sk-0123"}},
		// Not JSON: text is kept (scrubbed), HTML is not.
		{502, "upstream connect error to https://u:p@10.0.0.1/", false,
			map[string]string{"error.message": "upstream connect error to https://[redacted]@10.0.0.1/", "error.type": "server_error"}, []string{"u:p"}},
		{502, "<html><body>Bad Gateway sk-abcdefghijkl</body></html>", false,
			map[string]string{"error.message": "the upstream provider answered HTTP 502 Bad Gateway"}, []string{"html", "sk-"}},
		{500, "", true,
			map[string]string{"error.type": "api_error", "error.message": "the upstream provider answered HTTP 500 Internal Server Error"}, nil},
	} {
		got := UpstreamBody(tc.status, []byte(tc.body), shapeOf(tc.anthropic), "mock-upstream-key")
		if !gjson.ValidBytes(got) {
			t.Fatalf("Test %d: invalid JSON %s", i, got)
		}
		for path, want := range tc.want {
			if v := gjson.GetBytes(got, path); v.String() != want {
				t.Errorf("Test %d: %s = %q, want %q (body %s)", i, path, v.String(), want, got)
			}
		}
		for _, s := range tc.gone {
			if strings.Contains(string(got), s) {
				t.Errorf("Test %d: the client's body %s holds %q", i, got, s)
			}
		}
		if !tc.anthropic && !gjson.GetBytes(got, "error.param").Exists() {
			t.Errorf("Test %d: OpenAI shape without error.param: %s", i, got)
		}
	}
}

// shapeOf is the error shape a test case names by its anthropic flag.
func shapeOf(anthropic bool) Shape {
	if anthropic {
		return ShapeAnthropic
	}
	return ShapeOpenAI
}
