package usagejson_test

import (
	"testing"

	"github.com/caddy-air/caddy-air/billing"
	"github.com/caddy-air/caddy-air/dialect/responses"
)

func TestNormalizeResponses(t *testing.T) {
	for _, tc := range []struct {
		name    string
		in      string
		want    billing.Usage
		wantErr bool
	}{
		{
			name: "plain",
			in:   `{"input_tokens":36,"output_tokens":87,"total_tokens":123}`,
			want: billing.Usage{Input: 36, Output: 87},
		},
		{
			name: "cached input is part of input_tokens, reasoning part of output_tokens",
			in: `{"input_tokens":2006,"input_tokens_details":{"cached_tokens":1920},
				"output_tokens":300,"output_tokens_details":{"reasoning_tokens":192},"total_tokens":2306}`,
			want: billing.Usage{Input: 86, CacheRead: 1920, Output: 300, Reasoning: 192},
		},
		{
			name: "details first, totals last",
			in:   `{"output_tokens_details":{"reasoning_tokens":4},"input_tokens_details":{"cached_tokens":10},"input_tokens":10,"output_tokens":5}`,
			want: billing.Usage{CacheRead: 10, Output: 5, Reasoning: 4},
		},
		{
			name: "cached above input is capped, reasoning above output is capped",
			in:   `{"input_tokens":5,"input_tokens_details":{"cached_tokens":9},"output_tokens":3,"output_tokens_details":{"reasoning_tokens":7}}`,
			want: billing.Usage{CacheRead: 5, Output: 3, Reasoning: 3},
		},
		{
			name: "negative and null counts are zero",
			in:   `{"input_tokens":-4,"input_tokens_details":null,"output_tokens":null,"output_tokens_details":{"reasoning_tokens":-1}}`,
			want: billing.Usage{},
		},
		{
			name: "chat completions field names are not read",
			in:   `{"prompt_tokens":10,"completion_tokens":3}`,
			want: billing.Usage{},
		},
		{
			name:    "not an object",
			in:      `[1,2]`,
			wantErr: true,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := responses.NormalizeUsage([]byte(tc.in))
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}
