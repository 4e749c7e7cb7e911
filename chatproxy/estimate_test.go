package chatproxy

import (
	"testing"

	"github.com/caddy-air/caddy-air/billing"
)

func TestEstimateRequest(t *testing.T) {
	for i, tc := range []struct {
		in      Inspected
		ceiling int64
		want    billing.Usage
	}{
		{Inspected{PromptBytes: 400, MaxTokens: 50}, 16384, billing.Usage{Input: 100, Output: 50}},
		// Without max_tokens, the model's output ceiling is reserved.
		{Inspected{PromptBytes: 401}, 16384, billing.Usage{Input: 101, Output: 16384}},
		{Inspected{}, 64000, billing.Usage{Input: 1, Output: 64000}},
		// A max_tokens above the ceiling is what the client asked for.
		{Inspected{MaxTokens: 100000}, 16384, billing.Usage{Input: 1, Output: 100000}},
		// A max_tokens of 2^63-1 counts as MaxTokenCount, so that the
		// estimate's total does not wrap around.
		{Inspected{PromptBytes: 4, MaxTokens: 1<<63 - 1}, 16384, billing.Usage{Input: 1, Output: billing.MaxTokenCount}},
	} {
		if got := EstimateRequest(tc.in, tc.ceiling); got != tc.want {
			t.Errorf("Test %d: EstimateRequest(%+v) = %+v, want %+v", i, tc.in, got, tc.want)
		}
	}
}
