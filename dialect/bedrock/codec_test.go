package bedrock

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/caddy-air/caddy-air/billing"
	"github.com/caddy-air/caddy-air/dialect"
)

func ptr[T any](v T) *T { return &v }

func TestEncodeRequest(t *testing.T) {
	r := &dialect.Request{
		Model:  "claude",
		System: []dialect.Block{{Kind: dialect.BlockText, Text: "Be brief.", CacheControl: json.RawMessage(`{"type":"ephemeral"}`)}},
		Messages: []dialect.Message{
			{Role: dialect.RoleUser, Content: []dialect.Block{
				{Kind: dialect.BlockText, Text: "Weather?"},
				{Kind: dialect.BlockImage, Image: &dialect.Image{MediaType: "image/jpg", Data: "AAAA"}},
			}},
			{Role: dialect.RoleAssistant, Content: []dialect.Block{
				{Kind: dialect.BlockThinking, Text: "hmm", Signature: "sig-1"},
				{Kind: dialect.BlockRedactedThinking, Data: "ZW5j"},
				{Kind: dialect.BlockToolUse, ToolID: "tooluse_1", ToolName: "weather", Input: json.RawMessage(`{"city":"Paris"}`)},
			}},
			{Role: dialect.RoleUser, Content: []dialect.Block{
				{Kind: dialect.BlockToolResult, ToolID: "tooluse_1", IsError: true, Content: []dialect.Block{{Kind: dialect.BlockText, Text: "no data"}}},
			}},
		},
		Tools:       []dialect.Tool{{Name: "weather", Description: "Gets weather", Schema: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}}}`), CacheControl: json.RawMessage(`{}`)}},
		ToolChoice:  &dialect.ToolChoice{Mode: dialect.ToolNamed, Name: "weather"},
		MaxTokens:   512,
		Temperature: ptr(0.5),
		TopP:        ptr(0.9),
		TopK:        ptr(int64(40)),
		Stop:        []string{"END"},
		Reasoning:   &dialect.Reasoning{Effort: "high"},
	}
	b, err := Codec{}.EncodeRequest([]byte("prefix:"), r)
	if err != nil {
		t.Fatal(err)
	}
	if string(b[:7]) != "prefix:" {
		t.Fatalf("EncodeRequest did not append to dst: %q", b)
	}
	body := gjson.ParseBytes(b[7:])
	for path, want := range map[string]string{
		"system":                       `[{"text":"Be brief."},{"cachePoint":{"type":"default"}}]`,
		"messages.0.role":              `"user"`,
		"messages.0.content.1":         `{"image":{"format":"jpeg","source":{"bytes":"AAAA"}}}`,
		"messages.1.role":              `"assistant"`,
		"messages.1.content.0":         `{"reasoningContent":{"reasoningText":{"text":"hmm","signature":"sig-1"}}}`,
		"messages.1.content.1":         `{"reasoningContent":{"redactedContent":"ZW5j"}}`,
		"messages.1.content.2":         `{"toolUse":{"toolUseId":"tooluse_1","name":"weather","input":{"city":"Paris"}}}`,
		"messages.2.content.0":         `{"toolResult":{"toolUseId":"tooluse_1","content":[{"text":"no data"}],"status":"error"}}`,
		"inferenceConfig":              `{"maxTokens":512,"temperature":0.5,"topP":0.9,"stopSequences":["END"]}`,
		"toolConfig.tools.0.toolSpec":  `{"name":"weather","description":"Gets weather","inputSchema":{"json":{"type":"object","properties":{"city":{"type":"string"}}}}}`,
		"toolConfig.tools.1":           `{"cachePoint":{"type":"default"}}`,
		"toolConfig.toolChoice":        `{"tool":{"name":"weather"}}`,
		"additionalModelRequestFields": `{"thinking":{"budget_tokens":4096,"type":"enabled"},"top_k":40}`,
		"model":                        ``,
	} {
		if got := body.Get(path).Raw; got != want {
			t.Errorf("%s = %s, want %s", path, got, want)
		}
	}
	if len(r.Unsupported) != 0 {
		t.Errorf("unsupported %v, want none", r.Unsupported)
	}
}

func TestEncodeRequestUnsupported(t *testing.T) {
	user := []dialect.Message{{Role: dialect.RoleUser, Content: []dialect.Block{{Kind: dialect.BlockText, Text: "hi"}}}}
	tools := []dialect.Tool{{Name: "t"}}
	for i, tc := range []struct {
		r           dialect.Request
		unsupported []string
		toolConfig  bool
	}{
		// "none" without tool blocks: the tools are left out, which forbids calls.
		{dialect.Request{Messages: user, Tools: tools, ToolChoice: &dialect.ToolChoice{Mode: dialect.ToolNone}}, nil, false},
		// With tool blocks in the history the tools stay, so "none" cannot be honoured.
		{dialect.Request{Messages: append([]dialect.Message{{Role: dialect.RoleAssistant, Content: []dialect.Block{{Kind: dialect.BlockToolUse, ToolID: "x", ToolName: "t"}}}}, user...),
			Tools: tools, ToolChoice: &dialect.ToolChoice{Mode: dialect.ToolNone}}, []string{"tool_choice"}, true},
		{dialect.Request{Messages: user, Tools: tools, ToolChoice: &dialect.ToolChoice{Mode: dialect.ToolAny, NoParallel: true}}, []string{"parallel_tool_calls"}, true},
		{dialect.Request{Messages: user, ResponseFormat: &dialect.ResponseFormat{Type: "json_object"}}, []string{"response_format"}, false},
	} {
		b, err := Codec{}.EncodeRequest(nil, &tc.r)
		if err != nil {
			t.Fatalf("Test %d: %v", i, err)
		}
		if !reflect.DeepEqual(tc.r.Unsupported, tc.unsupported) {
			t.Errorf("Test %d: unsupported %v, want %v", i, tc.r.Unsupported, tc.unsupported)
		}
		if got := gjson.GetBytes(b, "toolConfig").Exists(); got != tc.toolConfig {
			t.Errorf("Test %d: toolConfig present %v, want %v: %s", i, got, tc.toolConfig, b)
		}
	}
}

func TestEncodeRequestRefusesImageURL(t *testing.T) {
	for i, img := range []*dialect.Image{{URL: "https://example.com/a.png"}, {MediaType: "image/tiff", Data: "AAAA"}} {
		r := &dialect.Request{Messages: []dialect.Message{{Role: dialect.RoleUser, Content: []dialect.Block{{Kind: dialect.BlockImage, Image: img}}}}}
		_, err := Codec{}.EncodeRequest(nil, r)
		var de *dialect.Error
		if !errors.As(err, &de) || de.Status != http.StatusBadRequest || de.Param != "image_url" {
			t.Errorf("Test %d: error %v, want a 400 naming image_url", i, err)
		}
	}
}

func TestDecodeResponse(t *testing.T) {
	body := `{"output":{"message":{"role":"assistant","content":[
		{"reasoningContent":{"reasoningText":{"text":"hmm","signature":"sig-9"}}},
		{"reasoningContent":{"redactedContent":"ZW5j"}},
		{"text":"Calling."},
		{"toolUse":{"toolUseId":"tooluse_X","name":"weather","input":{"city":"Paris"}}}]}},
		"stopReason":"tool_use",
		"usage":{"inputTokens":20,"outputTokens":50,"totalTokens":43090,"cacheReadInputTokens":43000,"cacheWriteInputTokens":20},
		"metrics":{"latencyMs":300}}`
	r, err := Codec{}.DecodeResponse([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	want := &dialect.Response{
		Content: []dialect.Block{
			{Kind: dialect.BlockThinking, Text: "hmm", Signature: "sig-9"},
			{Kind: dialect.BlockRedactedThinking, Data: "ZW5j"},
			{Kind: dialect.BlockText, Text: "Calling."},
			{Kind: dialect.BlockToolUse, ToolID: "tooluse_X", ToolName: "weather", Input: json.RawMessage(`{"city":"Paris"}`)},
		},
		StopReason: dialect.StopToolUse,
		// Input excludes the cache: the ledger bills all 43,040 prompt tokens.
		Usage:         billing.Usage{Input: 20, CacheRead: 43000, CacheCreation: 20, Output: 50},
		UsageReported: true,
	}
	if !reflect.DeepEqual(r, want) {
		t.Errorf("got %+v\nwant %+v", r, want)
	}
	if r.Usage.PromptTotal() != 43040 {
		t.Errorf("prompt total %d, want 43040", r.Usage.PromptTotal())
	}
	for in, want := range map[string]dialect.StopReason{
		"end_turn": dialect.StopEnd, "max_tokens": dialect.StopMaxTokens, "stop_sequence": dialect.StopSequence,
		"guardrail_intervened": dialect.StopRefusal, "content_filtered": dialect.StopRefusal, "model_context_window_exceeded": dialect.StopMaxTokens,
	} {
		r, err := Codec{}.DecodeResponse([]byte(`{"output":{"message":{"role":"assistant","content":[]}},"stopReason":"` + in + `"}`))
		if err != nil || r.StopReason != want || r.UsageReported {
			t.Errorf("stopReason %s: %v, %v, usage %v; want %s without usage", in, r.StopReason, err, r.UsageReported, want)
		}
	}
	for _, bad := range []string{``, `{}`, `{"output":{}}`, `[1]`, `{"output":{"message":{"content":"x"}}}`} {
		if _, err := (Codec{}).DecodeResponse([]byte(bad)); err == nil {
			t.Errorf("%q decoded without error", bad)
		}
	}
}

func TestDecodeError(t *testing.T) {
	for i, tc := range []struct {
		status int
		typ    string
		body   string
		retry  string
		want   dialect.Error
	}{
		{429, "ThrottlingException:http://internal.amazon.com/coral/com.amazon.bedrock/", `{"message":"Too many requests"}`, "3",
			dialect.Error{Status: 429, Kind: dialect.ErrRateLimit, Message: "Too many requests", RetryAfter: 3 * time.Second}},
		{400, "ValidationException", `{"message":"bad"}`, "", dialect.Error{Status: 400, Kind: dialect.ErrInvalidRequest, Message: "bad"}},
		{403, "", `{"__type":"com.amazon.coral.service#InvalidSignatureException","Message":"sig"}`, "", dialect.Error{Status: 403, Kind: dialect.ErrAuthentication, Message: "sig"}},
		{403, "AccessDeniedException", `{"message":"no"}`, "", dialect.Error{Status: 403, Kind: dialect.ErrPermission, Message: "no"}},
		{503, "ServiceUnavailableException", `{}`, "", dialect.Error{Status: 503, Kind: dialect.ErrOverloaded, Message: "bedrock answered 503"}},
		{424, "ModelErrorException", `{"message":"m"}`, "", dialect.Error{Status: 400, Kind: dialect.ErrInvalidRequest, Message: "m"}},
		{500, "", `not json`, "", dialect.Error{Status: 500, Kind: dialect.ErrServer, Message: "bedrock answered 500"}},
		{408, "ModelTimeoutException", `{"message":"slow"}`, "", dialect.Error{Status: 504, Kind: dialect.ErrTimeout, Message: "slow"}},
	} {
		h := http.Header{}
		if tc.typ != "" {
			h.Set("X-Amzn-ErrorType", tc.typ)
		}
		if tc.retry != "" {
			h.Set("Retry-After", tc.retry)
		}
		if got := (Codec{}).DecodeError(tc.status, h, []byte(tc.body)); *got != tc.want {
			t.Errorf("Test %d: got %+v, want %+v", i, *got, tc.want)
		}
	}
}

func TestURL(t *testing.T) {
	for i, tc := range []struct {
		base, model string
		stream      bool
		want        string
	}{
		{BaseURL("us-east-1"), "anthropic.claude-3-5-sonnet-20240620-v1:0", false, "https://bedrock-runtime.us-east-1.amazonaws.com/model/anthropic.claude-3-5-sonnet-20240620-v1%3A0/converse"},
		{"http://127.0.0.1:9/", "us.amazon.nova-pro-v1:0", true, "http://127.0.0.1:9/model/us.amazon.nova-pro-v1%3A0/converse-stream"},
		{"https://x", "arn:aws:bedrock:us-east-1:123:inference-profile/us.meta.llama3", false, "https://x/model/arn%3Aaws%3Abedrock%3Aus-east-1%3A123%3Ainference-profile%2Fus.meta.llama3/converse"},
		// A prefix (a proxy's, the mock provider's mount), even one
		// holding "/model/".
		{"http://127.0.0.1:9/mock/model/bedrock", "us.amazon.nova-pro-v1:0", false, "http://127.0.0.1:9/mock/model/bedrock/model/us.amazon.nova-pro-v1%3A0/converse"},
	} {
		got := URL(tc.base, tc.model, tc.stream)
		if got != tc.want {
			t.Errorf("Test %d: %s, want %s", i, got, tc.want)
		}
		u, err := url.Parse(got)
		if err != nil {
			t.Fatal(err)
		}
		id, stream, ok := ModelFromPath(u.EscapedPath())
		if !ok || id != tc.model || stream != tc.stream {
			t.Errorf("Test %d: ModelFromPath = %q, %v, %v", i, id, stream, ok)
		}
	}
}

func TestEncodeRequestMergesTurnsOfOneRole(t *testing.T) {
	r := &dialect.Request{System: []dialect.Block{{Kind: dialect.BlockText}}, Tools: []dialect.Tool{{Name: "f"}}, Messages: []dialect.Message{
		{Role: dialect.RoleUser, Content: []dialect.Block{{Kind: dialect.BlockText, Text: "a"}, {Kind: dialect.BlockText}}},
		{Role: dialect.RoleAssistant, Content: []dialect.Block{{Kind: dialect.BlockToolUse, ToolID: "1", ToolName: "f"}, {Kind: dialect.BlockToolUse, ToolID: "2", ToolName: "f"}}},
		{Role: dialect.RoleUser, Content: []dialect.Block{{Kind: dialect.BlockToolResult, ToolID: "1"}}},
		{Role: dialect.RoleUser, Content: []dialect.Block{{Kind: dialect.BlockToolResult, ToolID: "2"}}},
	}}
	b, err := Codec{}.EncodeRequest(nil, r)
	if err != nil {
		t.Fatal(err)
	}
	body := gjson.ParseBytes(b)
	// Two user messages in a row are one; empty text blocks are left out.
	if body.Get("messages.#").Int() != 3 || body.Get("messages.2.content.#.toolResult.toolUseId").Raw != `["1","2"]` ||
		body.Get("messages.0.content.#").Int() != 1 || body.Get("system").Exists() {
		t.Errorf("%s", b)
	}
}

func TestErrorMessagesLoseAccountIDs(t *testing.T) {
	h := http.Header{"X-Amzn-Errortype": {"AccessDeniedException"}}
	body := `{"message":"User: arn:aws:iam::123456789012:user/gateway is not authorized to perform: bedrock:InvokeModel on resource: arn:aws:bedrock:us-east-1::foundation-model/x because account 123456789012 has no access"}`
	e := Codec{}.DecodeError(403, h, []byte(body))
	if strings.Contains(e.Message, "123456789012") || strings.Contains(e.Message, "user/gateway") || !strings.Contains(e.Message, "is not authorized to perform") {
		t.Errorf("message %q", e.Message)
	}
}
