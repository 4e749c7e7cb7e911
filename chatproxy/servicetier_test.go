package chatproxy

import (
	"testing"

	"github.com/caddy-air/caddy-air/billing"
)

// TestTapServiceTier reads the service tier each protocol reports, streamed
// and whole, along with the 1-hour cache writes.
func TestTapServiceTier(t *testing.T) {
	for i, tc := range []struct {
		proto  Protocol
		events []string // SSE events; a single non-event string is a body
		tier   string
		usage  billing.Usage
	}{
		{OpenAI, []string{
			`data: {"id":"c","service_tier":"flex","choices":[{"delta":{"content":"hi"}}]}` + "\n\n",
			`data: {"id":"c","service_tier":"flex","choices":[],"usage":{"prompt_tokens":10,"completion_tokens":4,"completion_tokens_details":{"reasoning_tokens":3}}}` + "\n\n",
		}, "flex", billing.Usage{Input: 10, Output: 4, Reasoning: 3}},
		{OpenAI, []string{`{"id":"c","service_tier":"priority","choices":[],"usage":{"prompt_tokens":10,"completion_tokens":4}}`},
			"priority", billing.Usage{Input: 10, Output: 4}},
		{OpenAI, []string{`{"id":"c","choices":[],"usage":{"prompt_tokens":10,"completion_tokens":4}}`}, "", billing.Usage{Input: 10, Output: 4}},
		{Anthropic, []string{
			"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":10,\"cache_creation_input_tokens\":300,\"cache_creation\":{\"ephemeral_5m_input_tokens\":100,\"ephemeral_1h_input_tokens\":200},\"output_tokens\":1,\"service_tier\":\"priority\"}}}\n\n",
			"event: message_delta\ndata: {\"type\":\"message_delta\",\"usage\":{\"output_tokens\":7}}\n\n",
		}, "priority", billing.Usage{Input: 10, CacheCreation: 300, CacheCreation1h: 200, Output: 7}},
		{Anthropic, []string{`{"type":"message","usage":{"input_tokens":5,"output_tokens":2,"service_tier":"standard"}}`},
			"standard", billing.Usage{Input: 5, Output: 2}},
	} {
		tp := tap{proto: tc.proto}
		if len(tc.events) == 1 && tc.events[0][0] == '{' {
			tp.body([]byte(tc.events[0]), true)
		} else {
			for _, ev := range tc.events {
				tp.event([]byte(ev))
			}
		}
		u, _ := tp.result(0, false, false)
		if tp.serviceTier != tc.tier || u != tc.usage {
			t.Errorf("Test %d: got tier %q usage %+v, want %q %+v", i, tp.serviceTier, u, tc.tier, tc.usage)
		}
	}
}
