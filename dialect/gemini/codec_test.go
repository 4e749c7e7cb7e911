package gemini

import (
	"encoding/json"
	"errors"
	"net/http"
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
		System: []dialect.Block{{Kind: dialect.BlockText, Text: "Be brief.", CacheControl: json.RawMessage(`{"type":"ephemeral"}`)}},
		Messages: []dialect.Message{
			{Role: dialect.RoleUser, Content: []dialect.Block{
				{Kind: dialect.BlockText, Text: "Weather?"},
				{Kind: dialect.BlockImage, Image: &dialect.Image{MediaType: "image/png", Data: "AAAA"}},
			}},
			{Role: dialect.RoleAssistant, Content: []dialect.Block{
				{Kind: dialect.BlockThinking, Text: "hmm"},
				{Kind: dialect.BlockThinking, Signature: "SIG-TEXT"},
				{Kind: dialect.BlockText, Text: "Let me check."},
				{Kind: dialect.BlockToolUse, ToolID: "call_r1_0", ToolName: "weather", Input: json.RawMessage(`{"city":"Paris"}`), Signature: "SIG-CALL"},
				{Kind: dialect.BlockToolUse, ToolID: "call_r1_1", ToolName: "clock"},
				{Kind: dialect.BlockRedactedThinking, Data: "enc"},
			}},
			{Role: dialect.RoleUser, Content: []dialect.Block{
				{Kind: dialect.BlockToolResult, ToolID: "call_r1_0", Content: []dialect.Block{{Kind: dialect.BlockText, Text: `{"temp":21}`}}},
				{Kind: dialect.BlockToolResult, ToolID: "call_r1_1", IsError: true, Content: []dialect.Block{{Kind: dialect.BlockText, Text: "clock broke"}}},
			}},
		},
		Tools:          []dialect.Tool{{Name: "weather", Description: "Gets weather", Schema: json.RawMessage(`{"type":"object","additionalProperties":false}`)}, {Name: "clock"}},
		ToolChoice:     &dialect.ToolChoice{Mode: dialect.ToolNamed, Name: "weather"},
		MaxTokens:      512,
		Temperature:    ptr(0.5),
		TopK:           ptr(int64(40)),
		Stop:           []string{"END"},
		ResponseFormat: &dialect.ResponseFormat{Type: "json_schema", Schema: json.RawMessage(`{"type":"object"}`)},
		Reasoning:      &dialect.Reasoning{BudgetTokens: 1024},
	}
	b, err := Codec{}.EncodeRequest(nil, r)
	if err != nil {
		t.Fatal(err)
	}
	body := gjson.ParseBytes(b)
	for path, want := range map[string]string{
		"systemInstruction":          `{"parts":[{"text":"Be brief."}]}`,
		"contents.0":                 `{"role":"user","parts":[{"text":"Weather?"},{"inlineData":{"mimeType":"image/png","data":"AAAA"}}]}`,
		"contents.1.role":            `"model"`,
		"contents.1.parts.0":         `{"text":"hmm","thought":true}`,
		"contents.1.parts.1":         `{"text":"Let me check.","thoughtSignature":"SIG-TEXT"}`,
		"contents.1.parts.2":         `{"functionCall":{"name":"weather","args":{"city":"Paris"}},"thoughtSignature":"SIG-CALL"}`,
		"contents.1.parts.3":         `{"functionCall":{"name":"clock","args":{}}}`,
		"contents.1.parts.4":         ``,
		"contents.2.parts.0":         `{"functionResponse":{"name":"weather","response":{"content":{"temp":21}}}}`,
		"contents.2.parts.1":         `{"functionResponse":{"name":"clock","response":{"error":"clock broke"}}}`,
		"tools":                      `[{"functionDeclarations":[{"name":"weather","description":"Gets weather","parametersJsonSchema":{"type":"object","additionalProperties":false}},{"name":"clock"}]}]`,
		"toolConfig":                 `{"functionCallingConfig":{"mode":"ANY","allowedFunctionNames":["weather"]}}`,
		"generationConfig":           `{"maxOutputTokens":512,"temperature":0.5,"topK":40,"stopSequences":["END"],"responseMimeType":"application/json","responseJsonSchema":{"type":"object"},"thinkingConfig":{"includeThoughts":true,"thinkingBudget":1024}}`,
		"contents.1.parts.#.thought": `[true]`,
	} {
		if got := body.Get(path).Raw; got != want {
			t.Errorf("%s = %s, want %s", path, got, want)
		}
	}
	if len(r.Unsupported) != 0 {
		t.Errorf("unsupported %v", r.Unsupported)
	}
	// What was left out without changing the answer is reported.
	if want := []string{"cache_control", "redacted_thinking"}; !reflect.DeepEqual(r.Dropped, want) {
		t.Errorf("dropped %v, want %v", r.Dropped, want)
	}
}

func TestEncodeRequestRefusals(t *testing.T) {
	for i, tc := range []struct {
		blocks []dialect.Block
		param  string
	}{
		{[]dialect.Block{{Kind: dialect.BlockToolResult, ToolID: "call_unknown"}}, "tool_call_id"},
		{[]dialect.Block{{Kind: dialect.BlockImage, Image: &dialect.Image{URL: "https://example.com/cat.png"}}}, "image_url"},
		{[]dialect.Block{{Kind: dialect.BlockImage, Image: &dialect.Image{Data: "AAAA"}}}, "image_url"},
	} {
		r := &dialect.Request{Messages: []dialect.Message{{Role: dialect.RoleUser, Content: tc.blocks}}}
		_, err := Codec{}.EncodeRequest(nil, r)
		var de *dialect.Error
		if !errors.As(err, &de) || de.Status != 400 || de.Param != tc.param {
			t.Errorf("Test %d: %v, want a 400 naming %s", i, err, tc.param)
		}
	}
	r := &dialect.Request{Messages: []dialect.Message{{Role: dialect.RoleUser, Content: []dialect.Block{{Kind: dialect.BlockText, Text: "x"}}}},
		ToolChoice: &dialect.ToolChoice{Mode: dialect.ToolAuto, NoParallel: true}, Reasoning: &dialect.Reasoning{Disabled: true}}
	b, err := Codec{}.EncodeRequest(nil, r)
	if err != nil || !reflect.DeepEqual(r.Unsupported, []string{"parallel_tool_calls"}) || gjson.GetBytes(b, "generationConfig.thinkingConfig").Raw != `{"thinkingBudget":0}` {
		t.Errorf("got %s, %v, unsupported %v", b, err, r.Unsupported)
	}
}

func TestDecodeResponse(t *testing.T) {
	body := `{"candidates":[{"content":{"role":"model","parts":[
		{"text":"**Planning**","thought":true},
		{"text":"Checking.","thoughtSignature":"SIG-T"},
		{"functionCall":{"name":"weather","args":{"city":"Paris"}},"thoughtSignature":"SIG-C"},
		{"functionCall":{"name":"clock","args":{}}}]},
		"finishReason":"STOP","index":0}],
		"usageMetadata":{"promptTokenCount":1000,"candidatesTokenCount":50,"totalTokenCount":1250,"cachedContentTokenCount":800,"thoughtsTokenCount":200},
		"modelVersion":"gemini-3-pro-preview","responseId":"resp1"}`
	r, err := Codec{}.DecodeResponse([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	want := &dialect.Response{
		ID: "resp1", Model: "gemini-3-pro-preview",
		Content: []dialect.Block{
			{Kind: dialect.BlockThinking, Text: "**Planning**"},
			{Kind: dialect.BlockThinking, Signature: "SIG-T"},
			{Kind: dialect.BlockText, Text: "Checking."},
			{Kind: dialect.BlockToolUse, ToolID: "call_resp1_0__ts_U0lHLUM", ToolName: "weather", Input: json.RawMessage(`{"city":"Paris"}`), Signature: "SIG-C"},
			{Kind: dialect.BlockToolUse, ToolID: "call_resp1_1", ToolName: "clock", Input: json.RawMessage(`{}`)},
		},
		StopReason: dialect.StopToolUse,
		// promptTokenCount includes the cache; the thoughts are output.
		Usage:         billing.Usage{Input: 200, CacheRead: 800, Output: 250, Reasoning: 200},
		UsageReported: true,
	}
	if !reflect.DeepEqual(r, want) {
		t.Errorf("got  %+v\nwant %+v", r, want)
	}
	for in, want := range map[string]dialect.StopReason{"STOP": dialect.StopEnd, "MAX_TOKENS": dialect.StopMaxTokens, "SAFETY": dialect.StopRefusal, "OTHER": dialect.StopEnd} {
		r, err := Codec{}.DecodeResponse([]byte(`{"candidates":[{"content":{"parts":[{"text":"x"}]},"finishReason":"` + in + `"}]}`))
		if err != nil || r.StopReason != want || r.UsageReported {
			t.Errorf("%s: %v %v", in, r, err)
		}
	}
	if r, err := (Codec{}).DecodeResponse([]byte(`{"promptFeedback":{"blockReason":"SAFETY"}}`)); err != nil || r.StopReason != dialect.StopRefusal {
		t.Errorf("a blocked prompt: %+v, %v", r, err)
	}
	for _, bad := range []string{``, `{}`, `[]`, `{"candidates":"x"}`} {
		if _, err := (Codec{}).DecodeResponse([]byte(bad)); err == nil {
			t.Errorf("%q decoded", bad)
		}
	}
}

func TestSignatureInToolID(t *testing.T) {
	sig := "CiQB0e2Kb+/x=="
	id := WithSignature("call_r1_0", sig)
	if SignatureOf(id) != sig || strings.Trim(id, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") != "" {
		t.Errorf("id %q carries %q", id, SignatureOf(id))
	}
	if WithSignature("call_r1_0", "") != "call_r1_0" || SignatureOf("call_r1_0") != "" || SignatureOf("x__ts_!!") != "" {
		t.Error("an id without a signature changed or yielded one")
	}
	// A tool use whose Signature a client protocol lost still sends it.
	r := &dialect.Request{Messages: []dialect.Message{
		{Role: dialect.RoleUser, Content: []dialect.Block{{Kind: dialect.BlockText, Text: "w?"}}},
		{Role: dialect.RoleAssistant, Content: []dialect.Block{{Kind: dialect.BlockToolUse, ToolID: id, ToolName: "weather"}}},
		{Role: dialect.RoleUser, Content: []dialect.Block{{Kind: dialect.BlockToolResult, ToolID: id, Content: []dialect.Block{{Kind: dialect.BlockText, Text: "sun"}}}}},
	}}
	b, err := Codec{}.EncodeRequest(nil, r)
	if err != nil || gjson.GetBytes(b, "contents.1.parts.0.thoughtSignature").Str != sig || gjson.GetBytes(b, "contents.2.parts.0.functionResponse.name").Str != "weather" {
		t.Errorf("%s %v", b, err)
	}
}

func TestEncodeRequestMergesTurnsOfOneRole(t *testing.T) {
	text := func(s string) []dialect.Block { return []dialect.Block{{Kind: dialect.BlockText, Text: s}} }
	r := &dialect.Request{Messages: []dialect.Message{
		{Role: dialect.RoleUser, Content: text("a")},
		{Role: dialect.RoleAssistant, Content: []dialect.Block{{Kind: dialect.BlockToolUse, ToolID: "1", ToolName: "f"}, {Kind: dialect.BlockToolUse, ToolID: "2", ToolName: "g"}}},
		{Role: dialect.RoleUser, Content: []dialect.Block{{Kind: dialect.BlockToolResult, ToolID: "1"}}},
		{Role: dialect.RoleUser, Content: []dialect.Block{{Kind: dialect.BlockToolResult, ToolID: "2"}}},
	}}
	b, err := Codec{}.EncodeRequest(nil, r)
	if err != nil || gjson.GetBytes(b, "contents.#").Int() != 3 || gjson.GetBytes(b, "contents.2.parts.#.functionResponse.name").Raw != `["f","g"]` {
		t.Errorf("%s %v", b, err)
	}
}

func TestToolIDsAreUniqueAcrossTurns(t *testing.T) {
	a, b := ToolID("r1", 0, "f", nil), ToolID("r2", 0, "f", nil)
	c, d := ToolID("", 0, "f", []byte(`{"a":1}`)), ToolID("", 0, "f", []byte(`{"a":2}`))
	if a == b || c == d || a == ToolID("r1", 1, "f", nil) {
		t.Errorf("ids collide: %s %s %s %s", a, b, c, d)
	}
}

func TestDecodeError(t *testing.T) {
	for i, tc := range []struct {
		status int
		body   string
		want   dialect.Error
	}{
		{429, `{"error":{"code":429,"message":"quota","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"17s"}]}}`,
			dialect.Error{Status: 429, Kind: dialect.ErrRateLimit, Message: "quota", RetryAfter: 17 * time.Second}},
		{400, `{"error":{"code":400,"message":"API key not valid.","status":"INVALID_ARGUMENT","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"API_KEY_INVALID"}]}}`,
			dialect.Error{Status: 401, Kind: dialect.ErrAuthentication, Message: "API key not valid."}},
		{400, `{"error":{"code":400,"message":"bad","status":"INVALID_ARGUMENT"}}`, dialect.Error{Status: 400, Kind: dialect.ErrInvalidRequest, Message: "bad"}},
		{403, `{"error":{"code":403,"message":"denied","status":"PERMISSION_DENIED"}}`, dialect.Error{Status: 403, Kind: dialect.ErrPermission, Message: "denied"}},
		{404, `{"error":{"code":404,"message":"no model","status":"NOT_FOUND"}}`, dialect.Error{Status: 404, Kind: dialect.ErrNotFound, Message: "no model"}},
		{503, `{"error":{"code":503,"message":"overloaded","status":"UNAVAILABLE"}}`, dialect.Error{Status: 503, Kind: dialect.ErrOverloaded, Message: "overloaded"}},
		{500, `{"error":{"code":500,"message":"oops","status":"INTERNAL"}}`, dialect.Error{Status: 502, Kind: dialect.ErrServer, Message: "oops"}},
		{504, `{"error":{"code":504,"message":"slow","status":"DEADLINE_EXCEEDED"}}`, dialect.Error{Status: 504, Kind: dialect.ErrTimeout, Message: "slow"}},
		{502, `<html>bad gateway</html>`, dialect.Error{Status: 502, Kind: dialect.ErrServer, Message: "gemini answered 502"}},
	} {
		if got := (Codec{}).DecodeError(tc.status, http.Header{}, []byte(tc.body)); *got != tc.want {
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
		{BaseURL, "gemini-2.5-flash", false, "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:generateContent"},
		{"http://127.0.0.1:1/", "models/gemini-3-pro-preview", true, "http://127.0.0.1:1/v1beta/models/gemini-3-pro-preview:streamGenerateContent?alt=sse"},
		{BaseURL, "tunedModels/my-model", false, "https://generativelanguage.googleapis.com/v1beta/tunedModels/my-model:generateContent"},
	} {
		if got := URL(tc.base, tc.model, tc.stream); got != tc.want {
			t.Errorf("Test %d: %s, want %s", i, got, tc.want)
		}
	}
	h := http.Header{}
	SetAuth(h, "k1")
	if h.Get("x-goog-api-key") != "k1" {
		t.Errorf("key header %v", h)
	}
}

func TestErrorMessagesLoseProjectIDs(t *testing.T) {
	body := `{"error":{"code":403,"status":"PERMISSION_DENIED","message":"Permission denied on resource project my-secret-proj-42 (or it may not exist): projects/my-secret-proj-42/locations/us-central1"}}`
	e := Codec{}.DecodeError(403, http.Header{}, []byte(body))
	if strings.Contains(e.Message, "my-secret-proj-42") || !strings.Contains(e.Message, "Permission denied on resource project") {
		t.Errorf("message %q", e.Message)
	}
}
