package chatproxy

import (
	"github.com/caddy-air/caddy-air/billing"
	"github.com/caddy-air/caddy-air/dialect"
)

// The estimation heuristic, used only when an upstream reports no usage, is
// dialect.Estimate's: one token per 4 bytes of text. The prompt's text is
// sized as the request is inspected (reqscan.go), its output by the Wire's
// tap.

// EstimateRequest is what in is expected to use, for budget admission
// before the upstream answers: its prompt estimate, and max_tokens of
// output or, when the request sets none, ceiling (the model's
// max_output_tokens), at most billing.MaxTokenCount.
func EstimateRequest(in Inspected, ceiling int64) billing.Usage {
	u := dialect.Estimate(int64(in.PromptBytes), 0)
	u.Characters = in.Characters   // a speech input, for a character price
	u.AudioMillis = in.AudioMillis // a transcription's audio, for a per-second price
	u.Output = in.MaxTokens
	if u.Output <= 0 {
		u.Output = ceiling
	}
	return u.Bounded()
}
