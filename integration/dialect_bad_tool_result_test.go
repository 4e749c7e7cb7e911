package integration

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/tidwall/gjson"
)

// strictToolsChat is an OpenAI-protocol upstream that, as OpenAI does,
// refuses a tool message whose tool_call_id is not among the tool_calls
// of the assistant message before it, and answers anything else.
func strictToolsChat(t *testing.T) *upstream {
	return newUpstream(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
		w.Header().Set("Content-Type", "application/json")
		calls := map[string]bool{}
		for i, m := range gjson.GetBytes(body, "messages").Array() {
			switch m.Get("role").Str {
			case "assistant":
				calls = map[string]bool{}
				m.Get("tool_calls.#.id").ForEach(func(_, id gjson.Result) bool { calls[id.Str] = true; return true })
			case "tool":
				if id := m.Get("tool_call_id").Str; !calls[id] {
					w.WriteHeader(http.StatusBadRequest)
					_, _ = fmt.Fprintf(w, `{"error":{"message":"Invalid parameter: 'tool_call_id' of '%s' not found in 'tool_calls' of previous message.","type":"invalid_request_error","param":"messages.[%d].tool_call_id","code":null}}`, id, i)
					return
				}
			}
		}
		_, _ = io.WriteString(w, `{"id":"chatcmpl-t1","object":"chat.completion","created":1,"model":"rec-gpt","choices":[{"index":0,"message":{"role":"assistant","content":"It rains."},"finish_reason":"stop"}],"usage":{"prompt_tokens":21,"completion_tokens":3,"total_tokens":24}}`)
	})
}

// TestDialectUnknownToolResult: an Anthropic client's tool_result for an
// id no tool_use carries, sent to an openai model. The gateway keeps tool
// ids as the client wrote them (docs/dialects.md), so it forwards the
// result under its id; the provider refuses it, and the client gets that
// refusal as Anthropic's invalid_request_error 400 naming the id, with
// exactly one ledger record for the exchange. The same turn with the
// right id is answered.
func TestDialectUnknownToolResult(t *testing.T) {
	up := strictToolsChat(t)
	startGateway(t, gatewayOptions{Providers: providerBlock("rec-strict", "openai", "retries 0", up), Models: "model rec-strict-gpt rec-strict"})
	key, _ := createKey(t, "a2o-bad-tool")
	client := anthropicClient(key)
	turn := func(id string) (*anthropic.Message, error) {
		return client.Messages.New(context.Background(), anthropic.MessageNewParams{
			Model: "rec-strict-gpt", MaxTokens: 64, Tools: []anthropic.ToolUnionParam{weatherTool},
			Messages: []anthropic.MessageParam{
				anthropic.NewUserMessage(anthropic.NewTextBlock("Weather in Oslo?")),
				anthropic.NewAssistantMessage(anthropic.NewToolUseBlock("call_abc", map[string]any{"city": "Oslo"}, "get_weather")),
				anthropic.NewUserMessage(anthropic.NewToolResultBlock(id, "12 degrees and rain", false)),
			}})
	}
	_, err := turn("toolu_nope")
	var apiErr *anthropic.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusBadRequest {
		t.Fatalf("unknown id: %v", err)
	}
	raw := apiErr.RawJSON()
	if gjson.Get(raw, "type").Str != "error" || gjson.Get(raw, "error.type").Str != "invalid_request_error" ||
		!strings.Contains(gjson.Get(raw, "error.message").Str, "toolu_nope") {
		t.Errorf("unknown id: error %s", raw)
	}
	if sent := up.lastBody(t); gjson.GetBytes(sent, "messages.2.role").Str != "tool" || gjson.GetBytes(sent, "messages.2.tool_call_id").Str != "toolu_nope" {
		t.Errorf("the provider got %s", sent)
	}
	ok, err := turn("call_abc")
	if err != nil || ok.Content[0].Text != "It rains." || ok.StopReason != anthropic.StopReasonEndTurn {
		t.Fatalf("known id: %+v %v", ok, err)
	}
	recs := waitLedger(t, "a2o-bad-tool", 2)
	if r := recs[0]; r.Endpoint != "messages" || r.Outcome != "upstream_error" || r.Status != http.StatusBadRequest || r.Provider != "rec-strict" {
		t.Errorf("refused exchange: record %+v", r)
	}
	if r := recs[1]; r.Outcome != "ok" || r.Usage.Input != 21 || r.Usage.Output != 3 {
		t.Errorf("answered exchange: record %+v", r)
	}
}
