package chatproxy

import (
	"testing"

	"github.com/caddy-air/caddy-air/billing"
)

func TestEstimateRequest(t *testing.T) {
	for i, tc := range []struct {
		in   Inspected
		want billing.Usage
	}{
		{Inspected{PromptBytes: 400, MaxTokens: 50}, billing.Usage{Input: 100, Output: 50}},
		{Inspected{PromptBytes: 401}, billing.Usage{Input: 101, Output: defaultOutputEstimate}},
		{Inspected{}, billing.Usage{Input: 1, Output: defaultOutputEstimate}},
		// A max_tokens of 2^63-1 counts as MaxTokenCount, so that the
		// estimate's total does not wrap around.
		{Inspected{PromptBytes: 4, MaxTokens: 1<<63 - 1}, billing.Usage{Input: 1, Output: billing.MaxTokenCount}},
	} {
		if got := EstimateRequest(tc.in); got != tc.want {
			t.Errorf("Test %d: EstimateRequest(%+v) = %+v, want %+v", i, tc.in, got, tc.want)
		}
	}
}
