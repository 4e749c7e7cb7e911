package chatproxy

import (
	"strings"
	"testing"

	"github.com/caddy-air/caddy-air/billing"
)

// An upstream that repeats its usage, or a count inside it, is billed the
// largest copy: never the smaller one a first-wins reader would take, nor
// less than the last copy the client's JSON parser keeps.
func TestRepeatedUsageBillsTheLargest(t *testing.T) {
	for i, tc := range []struct {
		proto Protocol
		body  string
		want  billing.Usage
	}{
		// Two usage objects, small first, then large first.
		{OpenAI, `{"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":5},"usage":{"prompt_tokens":1000,"completion_tokens":500}}`,
			billing.Usage{Input: 1000, Output: 500}},
		{OpenAI, `{"usage":{"prompt_tokens":1000,"completion_tokens":500},"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":5}}`,
			billing.Usage{Input: 1000, Output: 500}},
		// One count twice, and a detail object twice.
		{OpenAI, `{"usage":{"prompt_tokens":10,"completion_tokens":5,"prompt_tokens":1000}}`, billing.Usage{Input: 1000, Output: 5}},
		{OpenAI, `{"usage":{"prompt_tokens":100,"completion_tokens":50,"completion_tokens_details":{"reasoning_tokens":40},"completion_tokens_details":{"reasoning_tokens":2}}}`,
			billing.Usage{Input: 100, Output: 50, Reasoning: 40}},
		// Conflicting copies merge field by field: the larger of each.
		{OpenAI, `{"usage":{"prompt_tokens":1000,"completion_tokens":5},"usage":{"prompt_tokens":10,"completion_tokens":500}}`,
			billing.Usage{Input: 1000, Output: 500}},
		{Anthropic, `{"type":"message","usage":{"input_tokens":3,"output_tokens":700,"output_tokens":7}}`, billing.Usage{Input: 3, Output: 700}},
		{Responses, `{"object":"response","usage":{"input_tokens":9,"output_tokens":1},"usage":{"input_tokens":9,"output_tokens":900}}`,
			billing.Usage{Input: 9, Output: 900}},
		// No repeat: as before.
		{OpenAI, `{"usage":{"prompt_tokens":7,"completion_tokens":3}}`, billing.Usage{Input: 7, Output: 3}},
	} {
		tp := tap{proto: tc.proto}
		tp.body([]byte(tc.body), true)
		got, src := tp.result(len(tc.body), false, false)
		if got != tc.want || src != billing.SourceReported {
			t.Errorf("Test %d: billed %+v (%s), want %+v", i, got, src, tc.want)
		}
	}
}

// In a stream: a usage chunk with two usage members, a usage member with
// a repeated count, two usage chunks (the larger first), and an Anthropic
// message_delta with output_tokens twice.
func TestRepeatedStreamUsageBillsTheLargest(t *testing.T) {
	chunk := func(s string) string { return "data: " + s + "\n\n" }
	for i, tc := range []struct {
		proto  Protocol
		events []string
		want   billing.Usage
	}{
		{OpenAI, []string{
			chunk(`{"id":"c","choices":[{"index":0,"delta":{"content":"hi"}}]}`),
			chunk(`{"id":"c","choices":[],"usage":{"prompt_tokens":1,"completion_tokens":1},"usage":{"prompt_tokens":1000,"completion_tokens":50000}}`),
			chunk(`[DONE]`)}, billing.Usage{Input: 1000, Output: 50000}},
		{OpenAI, []string{
			chunk(`{"id":"c","choices":[],"usage":{"prompt_tokens":1000,"completion_tokens":1,"completion_tokens":50000}}`),
			chunk(`[DONE]`)}, billing.Usage{Input: 1000, Output: 50000}},
		{OpenAI, []string{
			chunk(`{"id":"c","choices":[],"usage":{"prompt_tokens":1000,"completion_tokens":50000}}`),
			chunk(`{"id":"c","choices":[],"usage":{"prompt_tokens":1,"completion_tokens":1}}`),
			chunk(`[DONE]`)}, billing.Usage{Input: 1000, Output: 50000}},
		{Anthropic, []string{
			"event: message_start\n" + chunk(`{"type":"message_start","message":{"usage":{"input_tokens":20,"output_tokens":1}}}`),
			"event: message_delta\n" + chunk(`{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":900,"output_tokens":9}}`),
			"event: message_stop\n" + chunk(`{"type":"message_stop"}`)}, billing.Usage{Input: 20, Output: 900}},
	} {
		tp := tap{proto: tc.proto}
		for _, ev := range tc.events {
			tp.event([]byte(strings.TrimSuffix(ev, "\n\n")))
		}
		got, _ := tp.result(10, false, false)
		if got != tc.want {
			t.Errorf("Test %d: billed %+v, want %+v", i, got, tc.want)
		}
	}
}
