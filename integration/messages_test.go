package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	aoption "github.com/anthropics/anthropic-sdk-go/option"
	"github.com/tidwall/gjson"
)

const messagesBody = `{"model":"rec-claude","max_tokens":1024,
 "system":[{"type":"text","text":"You are terse.","cache_control":{"type":"ephemeral"}}],
 "messages":[{"role":"user","content":[{"type":"text","text":"Long document…","cache_control":{"type":"ephemeral","ttl":"1h"}},{"type":"text","text":"Question?"}]}],
 "tools":[{"name":"lookup","description":"d","input_schema":{"type":"object"}}],
 "thinking":{"type":"enabled","budget_tokens":2048},"metadata":{"user_id":"u1"},"vendor_ext":[1,{"x":true}]}`

const messagesResponse = `{"id":"msg_01","type":"message","role":"assistant","model":"rec-claude","content":[{"type":"thinking","thinking":"hmm","signature":"sig"},{"type":"text","text":"Done."}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":100,"cache_creation_input_tokens":2000,"cache_read_input_tokens":500,"cache_creation":{"ephemeral_5m_input_tokens":2000,"ephemeral_1h_input_tokens":0},"output_tokens":50,"service_tier":"standard"}}`

var messagesStream = []string{
	"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_02\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"rec-claude\",\"content\":[],\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":10,\"cache_creation_input_tokens\":0,\"cache_read_input_tokens\":3000,\"output_tokens\":1}}}\n\n",
	"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"thinking\",\"thinking\":\"\"}}\n\n",
	"event: ping\ndata: {\"type\": \"ping\"}\n\n",
	"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\"Let me see\"}}\n\n",
	"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"signature_delta\",\"signature\":\"EqQB\"}}\n\n",
	"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
	"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
	"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hello\"}}\n\n",
	"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":1}\n\n",
	"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":15}}\n\n",
	"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":40}}\n\n",
	"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
}

// messagesPrices: the tier is chosen by input + cache creation + cache read.
const messagesPrices = `{"currency":"USD","models":{"rec-claude":{"tiers":[{"up_to":1000,"input":"1","output":"2"},{"input":"10","output":"20"}]}}}`

func anthropicUpstream(t *testing.T) *upstream {
	return newUpstream(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
		if gjson.GetBytes(body, "stream").Bool() {
			sseWrite(w, messagesStream...)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("request-id", "req_upstream")
		_, _ = io.WriteString(w, messagesResponse)
	})
}

func TestMessagesPassThrough(t *testing.T) {
	up := anthropicUpstream(t)
	startGateway(t, gatewayOptions{
		Providers: providerBlock("rec-anthropic", "anthropic", "", up),
		Models:    "model rec-claude rec-anthropic",
		Prices:    messagesPrices,
	})
	key, _ := createKey(t, "claude")

	status, hdr, body := call(t, http.MethodPost, "/v1/messages", "", messagesBody,
		"x-api-key", key, "anthropic-version", "2026-10-21", "anthropic-beta", "prompt-caching-2024-07-31")
	if status != http.StatusOK || string(body) != messagesResponse {
		t.Fatalf("status %d, body\n%s\nwant\n%s", status, body, messagesResponse)
	}
	if hdr.Get("upstream-request-id") != "req_upstream" || !strings.HasPrefix(hdr.Get("request-id"), "req_") || hdr.Get("request-id") == "req_upstream" {
		t.Errorf("want the gateway's request-id and the provider's as upstream-request-id: %v", hdr)
	}
	if got := up.lastBody(t); !bytes.Equal(got, []byte(messagesBody)) {
		t.Fatalf("upstream received\n%s\nwant\n%s", got, messagesBody)
	}
	h := up.lastHeader()
	if h.Get("x-api-key") != "upstream-key-0" || h.Get("anthropic-version") != "2026-10-21" || h.Get("anthropic-beta") != "prompt-caching-2024-07-31" || h.Get("Authorization") != "" {
		t.Fatalf("upstream headers %v", h)
	}

	// Bearer auth works too; a stream passes through byte for byte.
	streamBody := strings.Replace(messagesBody, `"max_tokens":1024`, `"max_tokens":1024,"stream":true`, 1)
	status, _, body = call(t, http.MethodPost, "/v1/messages", key, streamBody, "anthropic-version", "2023-06-01")
	if want := strings.Join(messagesStream, ""); status != http.StatusOK || string(body) != want {
		t.Fatalf("stream: status %d\n%s\nwant\n%s", status, body, want)
	}
	if up.lastHeader().Get("anthropic-version") != "2023-06-01" {
		t.Fatal("the Go SDK's anthropic-version was not forwarded")
	}

	recs := waitLedger(t, "claude", 2)
	for i, tc := range []struct {
		input, creation, read, output int64
		tier                          int
		cost                          string
	}{
		// 100+2000+500 = 2600 prompt tokens: tier 2 (10/20 per million).
		// 100×10 + 2000×1.25×10 + 500×0.1×10 + 50×20 = 27500 per million.
		{100, 2000, 500, 50, 1, "0.0275"},
		// 10+0+3000 = 3010: tier 2. 10×10 + 3000×0.1×10 + 40×20 = 3900.
		{10, 0, 3000, 40, 1, "0.0039"},
	} {
		r := recs[i]
		u := r.Usage
		if u.Input != tc.input || u.CacheCreation != tc.creation || u.CacheRead != tc.read || u.Output != tc.output || r.Tier != tc.tier || !r.Priced {
			t.Errorf("Test %d: record %+v", i, r)
		}
		if !sameDecimal(r.Cost, tc.cost) {
			t.Errorf("Test %d: cost %s, want %s", i, r.Cost, tc.cost)
		}
		if r.Endpoint != "messages" || r.Source != "reported" {
			t.Errorf("Test %d: record %+v", i, r)
		}
	}
}

// sameDecimal compares decimal strings, ignoring trailing zeros.
func sameDecimal(a, b string) bool {
	trim := func(s string) string {
		if strings.Contains(s, ".") {
			s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
		}
		return s
	}
	return trim(a) == trim(b)
}

func TestMessagesErrorsInAnthropicShape(t *testing.T) {
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request, _ []byte) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, `{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: field required"}}`)
	})
	startGateway(t, gatewayOptions{
		Providers: providerBlock("rec-anthropic", "anthropic", "", up),
		Models:    "model rec-claude rec-anthropic",
	})
	key, _ := createKey(t, "claude-errors")
	for i, tc := range []struct {
		key, body string
		status    int
		errType   string
	}{
		{"", `{"model":"rec-claude","messages":[{"role":"user","content":"x"}]}`, 401, "authentication_error"},
		{key, `{"model":"rec-claude"`, 400, "invalid_request_error"},
		{key, `{"model":"nope","messages":[{"role":"user","content":"x"}]}`, 404, "not_found_error"},
		{key, `{"model":"mock-embed","messages":[{"role":"user","content":"x"}]}`, 400, "invalid_request_error"},
	} {
		status, _, body := call(t, http.MethodPost, "/v1/messages", "", tc.body, "x-api-key", tc.key, "anthropic-version", "2023-06-01")
		var e struct {
			Type  string `json:"type"`
			Error struct {
				Type    string `json:"type"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal(body, &e); err != nil || status != tc.status || e.Type != "error" || e.Error.Type != tc.errType || e.Error.Message == "" {
			t.Errorf("Test %d: status %d body %s", i, status, body)
		}
	}
	status, _, body := call(t, http.MethodPost, "/v1/messages", key, `{"model":"rec-claude","messages":[{"role":"user","content":"x"}]}`, "anthropic-version", "2023-06-01")
	if status != http.StatusBadRequest || string(body) != `{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: field required"}}` {
		t.Fatalf("upstream error not passed through: %d %s", status, body)
	}
}

// TestMessagesAnthropicSDK uses the official Go SDK against the mock.
func TestMessagesAnthropicSDK(t *testing.T) {
	startGateway(t, gatewayOptions{})
	key, _ := createKey(t, "claude-sdk")
	client := anthropic.NewClient(aoption.WithBaseURL(baseURL), aoption.WithAPIKey(key), aoption.WithMaxRetries(0))
	ctx := context.Background()
	msg, err := client.Messages.New(ctx, anthropic.MessageNewParams{
		Model:     "mock-claude",
		MaxTokens: 128,
		Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Hi from Go"))},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(msg.Content) == 0 || msg.Content[0].Text == "" || msg.Usage.OutputTokens == 0 {
		t.Fatalf("message %+v", msg)
	}
	stream := client.Messages.NewStreaming(ctx, anthropic.MessageNewParams{
		Model:     "mock-claude",
		MaxTokens: 128,
		Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Stream from Go"))},
	})
	acc := anthropic.Message{}
	for stream.Next() {
		if err := acc.Accumulate(stream.Current()); err != nil {
			t.Fatal(err)
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if len(acc.Content) == 0 || acc.Content[0].Text == "" {
		t.Fatalf("accumulated %+v", acc)
	}
	waitLedger(t, "claude-sdk", 2)
}
