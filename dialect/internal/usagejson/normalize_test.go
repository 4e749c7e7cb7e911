package usagejson_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/caddy-air/caddy-air/billing"
	"github.com/caddy-air/caddy-air/dialect/anthropic"
	"github.com/caddy-air/caddy-air/dialect/openai"
	"github.com/caddy-air/caddy-air/jsonlimit"
)

func TestNormalizeOpenAI(t *testing.T) {
	for i, tc := range []struct {
		name string
		in   string
		want billing.Usage
	}{
		{
			name: "plain",
			in:   `{"prompt_tokens":19,"completion_tokens":10,"total_tokens":29}`,
			want: billing.Usage{Input: 19, Output: 10},
		},
		{
			name: "openai cached and reasoning",
			in: `{"prompt_tokens":2006,"completion_tokens":300,"total_tokens":2306,
				"prompt_tokens_details":{"cached_tokens":1920,"audio_tokens":0},
				"completion_tokens_details":{"reasoning_tokens":192,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}}`,
			want: billing.Usage{Input: 86, CacheRead: 1920, Output: 300, Reasoning: 192},
		},
		{
			name: "openai cache_write_tokens",
			in:   `{"prompt_tokens":3000,"completion_tokens":5,"prompt_tokens_details":{"cached_tokens":1000,"cache_write_tokens":1500}}`,
			want: billing.Usage{Input: 500, CacheRead: 1000, CacheCreation: 1500, Output: 5},
		},
		{
			name: "dashscope explicit cache, all variants present, counted once",
			in: `{"prompt_tokens":3019,"completion_tokens":104,"total_tokens":3123,
				"prompt_tokens_details":{"cached_tokens":0,"cache_creation_input_tokens":3015,"cache_type":"ephemeral",
				"cache_creation":{"ephemeral_5m_input_tokens":3015}}}`,
			want: billing.Usage{Input: 4, CacheCreation: 3015, Output: 104},
		},
		{
			name: "dashscope nested cache_creation_input_tokens",
			in:   `{"prompt_tokens":3019,"completion_tokens":1,"prompt_tokens_details":{"cache_creation":{"cache_creation_input_tokens":3015,"ephemeral_5m_input_tokens":3015}}}`,
			want: billing.Usage{Input: 4, CacheCreation: 3015, Output: 1},
		},
		{
			name: "dashscope ephemeral breakdown only",
			in:   `{"prompt_tokens":3019,"completion_tokens":1,"prompt_tokens_details":{"cache_creation":{"ephemeral_5m_input_tokens":3015}}}`,
			want: billing.Usage{Input: 4, CacheCreation: 3015, Output: 1},
		},
		{
			name: "1-hour writes in prompt_tokens_details",
			in:   `{"prompt_tokens":4000,"completion_tokens":1,"prompt_tokens_details":{"cache_creation":{"ephemeral_5m_input_tokens":1000,"ephemeral_1h_input_tokens":2000}}}`,
			want: billing.Usage{Input: 1000, CacheCreation: 3000, CacheCreation1h: 2000, Output: 1},
		},
		{
			name: "dashscope cache hit",
			in:   `{"prompt_tokens":3019,"completion_tokens":88,"prompt_tokens_details":{"cached_tokens":3015,"cache_type":"ephemeral"}}`,
			want: billing.Usage{Input: 4, CacheRead: 3015, Output: 88},
		},
		{
			name: "top-level cache_creation_input_tokens",
			in:   `{"prompt_tokens":100,"completion_tokens":1,"cache_creation_input_tokens":60}`,
			want: billing.Usage{Input: 40, CacheCreation: 60, Output: 1},
		},
		{
			name: "null details",
			in:   `{"prompt_tokens":7,"completion_tokens":3,"prompt_tokens_details":null,"completion_tokens_details":null}`,
			want: billing.Usage{Input: 7, Output: 3},
		},
		{
			name: "missing everything",
			in:   `{}`,
			want: billing.Usage{},
		},
		{
			name: "cached greater than prompt is clamped",
			in:   `{"prompt_tokens":100,"completion_tokens":5,"prompt_tokens_details":{"cached_tokens":150,"cache_write_tokens":20}}`,
			want: billing.Usage{CacheRead: 100, Output: 5},
		},
		{
			name: "cache writes greater than what remains",
			in:   `{"prompt_tokens":100,"completion_tokens":5,"prompt_tokens_details":{"cached_tokens":70,"cache_write_tokens":50}}`,
			want: billing.Usage{CacheRead: 70, CacheCreation: 30, Output: 5},
		},
		{
			name: "negative values",
			in:   `{"prompt_tokens":-5,"completion_tokens":-1,"prompt_tokens_details":{"cached_tokens":-3},"completion_tokens_details":{"reasoning_tokens":-2}}`,
			want: billing.Usage{},
		},
		{
			name: "reasoning greater than completion",
			in:   `{"prompt_tokens":5,"completion_tokens":10,"completion_tokens_details":{"reasoning_tokens":12}}`,
			want: billing.Usage{Input: 5, Output: 10, Reasoning: 10},
		},
		{
			name: "numeric strings and floats",
			in:   `{"prompt_tokens":"12","completion_tokens":3.0}`,
			want: billing.Usage{Input: 12, Output: 3},
		},
	} {
		got, err := openai.NormalizeUsage([]byte(tc.in))
		if err != nil {
			t.Errorf("Test %d (%s): unexpected error: %v", i, tc.name, err)
			continue
		}
		if got != tc.want {
			t.Errorf("Test %d (%s): got %+v, want %+v", i, tc.name, got, tc.want)
		}
		if got.PromptTotal() < 0 || got.Input < 0 || got.CacheRead < 0 || got.CacheCreation < 0 || got.Output < 0 || got.Reasoning < 0 {
			t.Errorf("Test %d (%s): negative bucket in %+v", i, tc.name, got)
		}
	}
}

func TestNormalizeAnthropic(t *testing.T) {
	for i, tc := range []struct {
		name string
		in   string
		want billing.Usage
	}{
		{
			name: "plain",
			in:   `{"input_tokens":25,"output_tokens":15}`,
			want: billing.Usage{Input: 25, Output: 15},
		},
		{
			name: "cache creation and read with breakdown",
			in: `{"input_tokens":21,"cache_creation_input_tokens":188086,"cache_read_input_tokens":5,
				"cache_creation":{"ephemeral_5m_input_tokens":188086,"ephemeral_1h_input_tokens":0},
				"output_tokens":393,"service_tier":"standard"}`,
			want: billing.Usage{Input: 21, CacheCreation: 188086, CacheRead: 5, Output: 393},
		},
		{
			name: "thinking tokens, part of the output",
			in:   `{"input_tokens":25,"output_tokens":15,"output_tokens_details":{"thinking_tokens":9}}`,
			want: billing.Usage{Input: 25, Output: 15, Reasoning: 9},
		},
		{
			name: "thinking tokens capped at the output",
			in:   `{"input_tokens":1,"output_tokens":5,"output_tokens_details":{"thinking_tokens":50}}`,
			want: billing.Usage{Input: 1, Output: 5, Reasoning: 5},
		},
		{
			name: "breakdown only",
			in:   `{"input_tokens":3,"cache_creation":{"ephemeral_5m_input_tokens":1000,"ephemeral_1h_input_tokens":24},"output_tokens":1}`,
			want: billing.Usage{Input: 3, CacheCreation: 1024, CacheCreation1h: 24, Output: 1},
		},
		{
			name: "1-hour and 5-minute writes with the total",
			in: `{"input_tokens":10,"cache_creation_input_tokens":3000,
				"cache_creation":{"ephemeral_5m_input_tokens":1000,"ephemeral_1h_input_tokens":2000},"output_tokens":7}`,
			want: billing.Usage{Input: 10, CacheCreation: 3000, CacheCreation1h: 2000, Output: 7},
		},
		{
			name: "1-hour writes capped at the total",
			in: `{"input_tokens":10,"cache_creation_input_tokens":500,
				"cache_creation":{"ephemeral_1h_input_tokens":2000},"output_tokens":7}`,
			want: billing.Usage{Input: 10, CacheCreation: 500, CacheCreation1h: 500, Output: 7},
		},
		{
			name: "null cache fields",
			in:   `{"input_tokens":3,"cache_creation_input_tokens":null,"cache_read_input_tokens":null,"cache_creation":null,"output_tokens":1}`,
			want: billing.Usage{Input: 3, Output: 1},
		},
		{
			name: "message_delta output only",
			in:   `{"output_tokens":503}`,
			want: billing.Usage{Output: 503},
		},
		{
			name: "negative values",
			in:   `{"input_tokens":-1,"cache_read_input_tokens":-4,"output_tokens":-9}`,
			want: billing.Usage{},
		},
	} {
		got, err := anthropic.NormalizeUsage([]byte(tc.in))
		if err != nil {
			t.Errorf("Test %d (%s): unexpected error: %v", i, tc.name, err)
			continue
		}
		if got != tc.want {
			t.Errorf("Test %d (%s): got %+v, want %+v", i, tc.name, got, tc.want)
		}
	}
}

func TestNormalizeRejectsNonObjects(t *testing.T) {
	for i, in := range []string{``, `null`, `[]`, `42`, `{"prompt_tokens":`, `"usage"`} {
		if _, err := openai.NormalizeUsage([]byte(in)); err == nil {
			t.Errorf("Test %d: openai.NormalizeUsage(%q) succeeded, want an error", i, in)
		}
		if _, err := anthropic.NormalizeUsage([]byte(in)); err == nil {
			t.Errorf("Test %d: anthropic.NormalizeUsage(%q) succeeded, want an error", i, in)
		}
	}
}

func TestNormalizeRejectsDeepNesting(t *testing.T) {
	for i, in := range []string{
		`{"prompt_tokens":1,"x":` + strings.Repeat("[", 16<<20) + `}`,
		strings.Repeat(`{"a":`, 200_000),
		`{"input_tokens":1,"x":` + strings.Repeat("[", 129) + strings.Repeat("]", 129) + `}`,
	} {
		_, err := openai.NormalizeUsage([]byte(in))
		var de *jsonlimit.DepthError
		if !errors.As(err, &de) || de.Limit != jsonlimit.DefaultMaxDepth {
			t.Errorf("Test %d: NormalizeOpenAI: got %v, want a depth error", i, err)
		}
		if _, err := anthropic.NormalizeUsage([]byte(in)); !errors.As(err, &de) {
			t.Errorf("Test %d: NormalizeAnthropic: got %v, want a depth error", i, err)
		}
	}
	// A deep value inside a string is text, not nesting.
	u, err := anthropic.NormalizeUsage([]byte(`{"input_tokens":7,"note":"` + strings.Repeat("[", 1<<20) + `"}`))
	if err != nil || u.Input != 7 {
		t.Errorf("brackets in a string: got %+v, %v", u, err)
	}
}

func BenchmarkNormalizeOpenAI(b *testing.B) {
	for _, bc := range []struct{ name, usage string }{
		{"plain", `{"prompt_tokens":212,"completion_tokens":104,"total_tokens":316,"prompt_tokens_details":{"cached_tokens":0},"completion_tokens_details":{"reasoning_tokens":0}}`},
		{"cache-details", `{"prompt_tokens":3019,"completion_tokens":104,"total_tokens":3123,"prompt_tokens_details":{"cached_tokens":2048,"cache_creation_input_tokens":900,"cache_type":"ephemeral","cache_creation":{"ephemeral_5m_input_tokens":900}},"completion_tokens_details":{"reasoning_tokens":64}}`},
	} {
		b.Run(bc.name, func(b *testing.B) {
			in := []byte(bc.usage)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := openai.NormalizeUsage(in); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
