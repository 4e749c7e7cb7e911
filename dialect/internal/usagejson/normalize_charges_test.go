package usagejson_test

import (
	"testing"

	"github.com/caddy-air/caddy-air/billing"
	"github.com/caddy-air/caddy-air/dialect/anthropic"
	"github.com/caddy-air/caddy-air/dialect/openai"
	"github.com/caddy-air/caddy-air/dialect/responses"
)

// TestNormalizeCharges reads the charges beyond plain tokens from each
// protocol's usage object: audio tokens (chat, Responses), Anthropic's
// server tool calls, and the image tokens of an Images answer.
func TestNormalizeCharges(t *testing.T) {
	for i, tc := range []struct {
		name string
		norm func([]byte) (billing.Usage, error)
		in   string
		want billing.Usage
	}{
		{"chat audio in and out", openai.NormalizeUsage,
			`{"prompt_tokens":1200,"completion_tokens":900,"prompt_tokens_details":{"cached_tokens":200,"audio_tokens":700},
			"completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":850}}`,
			billing.Usage{Input: 1000, CacheRead: 200, AudioInput: 700, Output: 900, AudioOutput: 850}},
		{"chat audio above the uncached prompt is capped", openai.NormalizeUsage,
			`{"prompt_tokens":100,"completion_tokens":5,"prompt_tokens_details":{"cached_tokens":60,"audio_tokens":90},
			"completion_tokens_details":{"audio_tokens":9}}`,
			billing.Usage{Input: 40, CacheRead: 60, AudioInput: 40, Output: 5, AudioOutput: 5}},
		{"chat audio negative and null", openai.NormalizeUsage,
			`{"prompt_tokens":10,"completion_tokens":5,"prompt_tokens_details":{"audio_tokens":-3},"completion_tokens_details":{"audio_tokens":null}}`,
			billing.Usage{Input: 10, Output: 5}},
		{"anthropic web search and fetch", anthropic.NormalizeUsage,
			`{"input_tokens":105,"output_tokens":512,"server_tool_use":{"web_search_requests":3,"web_fetch_requests":2}}`,
			billing.Usage{Input: 105, Output: 512, WebSearches: 3, WebFetches: 2}},
		{"anthropic code execution calls are one session", anthropic.NormalizeUsage,
			`{"input_tokens":10,"output_tokens":20,"server_tool_use":{"web_search_requests":0,"code_execution_requests":4}}`,
			billing.Usage{Input: 10, Output: 20, CodeSessions: 1}},
		{"anthropic server_tool_use null", anthropic.NormalizeUsage,
			`{"input_tokens":1,"output_tokens":2,"server_tool_use":null}`, billing.Usage{Input: 1, Output: 2}},
		{"anthropic negative searches", anthropic.NormalizeUsage,
			`{"input_tokens":1,"output_tokens":2,"server_tool_use":{"web_search_requests":-5}}`, billing.Usage{Input: 1, Output: 2}},
		{"responses audio", responses.NormalizeUsage,
			`{"input_tokens":500,"input_tokens_details":{"cached_tokens":100,"audio_tokens":300},"output_tokens":80,
			"output_tokens_details":{"reasoning_tokens":0,"audio_tokens":60}}`,
			billing.Usage{Input: 400, CacheRead: 100, AudioInput: 300, Output: 80, AudioOutput: 60}},
		{"images generation: all output is image tokens", openai.NormalizeImagesUsage,
			`{"total_tokens":4210,"input_tokens":50,"output_tokens":4160,"input_tokens_details":{"text_tokens":50,"image_tokens":0}}`,
			billing.Usage{Input: 50, Output: 4160, ImageOutput: 4160}},
		{"images edit: image input tokens", openai.NormalizeImagesUsage,
			`{"input_tokens":373,"output_tokens":1056,"input_tokens_details":{"text_tokens":50,"image_tokens":323}}`,
			billing.Usage{Input: 373, ImageInput: 323, Output: 1056, ImageOutput: 1056}},
		{"images output breakdown", openai.NormalizeImagesUsage,
			`{"input_tokens":20,"output_tokens":300,"output_tokens_details":{"image_tokens":272,"text_tokens":28}}`,
			billing.Usage{Input: 20, Output: 300, ImageOutput: 272}},
		{"images image tokens above the whole are capped", openai.NormalizeImagesUsage,
			`{"input_tokens":20,"output_tokens":300,"input_tokens_details":{"image_tokens":99},"output_tokens_details":{"image_tokens":999}}`,
			billing.Usage{Input: 20, ImageInput: 20, Output: 300, ImageOutput: 300}},
	} {
		got, err := tc.norm([]byte(tc.in))
		if err != nil || got != tc.want {
			t.Errorf("Test %d (%s): got %+v, %v; want %+v", i, tc.name, got, err, tc.want)
		}
	}
}

// TestQuoteNormalizedRules prices usage objects as the upstreams report
// them, through the protocol's normalization.
func TestQuoteNormalizedRules(t *testing.T) {
	pt, err := billing.LoadPrices("../../../prices.example.json")
	if err != nil {
		t.Fatal(err)
	}
	u, err := anthropic.NormalizeUsage([]byte(`{"input_tokens":1000,"cache_creation_input_tokens":3000,
		"cache_creation":{"ephemeral_5m_input_tokens":1000,"ephemeral_1h_input_tokens":2000},"output_tokens":100}`))
	if err != nil {
		t.Fatal(err)
	}
	if q := pt.Quote("mock-claude", u); q.Cost != 20_250_000 {
		t.Errorf("anthropic 1h writes: got %d, want 20250000 (before: both buckets at 1.25× gave 18750000)", q.Cost)
	}
	u, err = openai.NormalizeUsage([]byte(`{"prompt_tokens":1000,"completion_tokens":500,"completion_tokens_details":{"reasoning_tokens":400}}`))
	if err != nil {
		t.Fatal(err)
	}
	if q := pt.Quote("mock-reasoner", u); q.Cost != 6_000_000 || u.Reasoning != 400 {
		t.Errorf("reasoning: got %d and %+v, want 6000000 with 400 reasoning tokens", q.Cost, u)
	}
}
