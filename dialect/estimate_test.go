package dialect_test

import (
	"github.com/caddy-air/caddy-air/dialect"
	"testing"

	"github.com/caddy-air/caddy-air/billing"
)

func TestEstimateRequest(t *testing.T) {
	for i, tc := range []struct {
		in      dialect.Inspected
		ceiling int64
		want    billing.Usage
	}{
		{dialect.Inspected{PromptBytes: 400, MaxTokens: 50}, 16384, billing.Usage{Input: 100, Output: 50}},
		// Without max_tokens, the model's output ceiling is reserved.
		{dialect.Inspected{PromptBytes: 401}, 16384, billing.Usage{Input: 101, Output: 16384}},
		{dialect.Inspected{}, 64000, billing.Usage{Input: 1, Output: 64000}},
		// A max_tokens above the ceiling is what the client asked for.
		{dialect.Inspected{MaxTokens: 100000}, 16384, billing.Usage{Input: 1, Output: 100000}},
		// A max_tokens of 2^63-1 counts as MaxTokenCount, so that the
		// estimate's total does not wrap around.
		{dialect.Inspected{PromptBytes: 4, MaxTokens: 1<<63 - 1}, 16384, billing.Usage{Input: 1, Output: billing.MaxTokenCount}},
	} {
		if got := dialect.EstimateRequest(tc.in, tc.ceiling); got != tc.want {
			t.Errorf("Test %d: dialect.EstimateRequest(%+v) = %+v, want %+v", i, tc.in, got, tc.want)
		}
	}
}
