package billing

import "github.com/caddy-air/caddy-air/store"

// Usage is a request's token usage normalized into disjoint buckets, whatever
// protocol reported it. The prompt side is split into Input (not served from
// or written to a cache), CacheCreation and CacheRead; their sum is the
// request's total prompt tokens, which selects the price tier.
type Usage struct {
	// Input is the number of prompt tokens billed at the plain input price.
	Input int64 `json:"input_tokens"`
	// CacheCreation is the number of prompt tokens written to the cache.
	CacheCreation int64 `json:"cache_creation_tokens,omitempty"`
	// CacheCreation1h is the part of CacheCreation written with a one-hour
	// lifetime (Anthropic's ephemeral_1h_input_tokens). It is priced at the
	// model's 1-hour cache write multiplier, the rest of CacheCreation at
	// the 5-minute one.
	CacheCreation1h int64 `json:"cache_creation_1h_tokens,omitempty"`
	// CacheRead is the number of prompt tokens read from the cache.
	CacheRead int64 `json:"cache_read_tokens,omitempty"`
	// Output is the number of generated tokens, reasoning tokens included.
	Output int64 `json:"output_tokens"`
	// Reasoning is the part of Output spent on reasoning. It is billed as
	// output and shown separately in records and reports.
	Reasoning int64 `json:"reasoning_tokens,omitempty"`
}

// MaxTokenCount bounds every token count the gateway takes from outside:
// a count an upstream reports and the output a client's max_tokens asks
// for are read as at most this (about 1.1 trillion, beyond any real
// context), so that sums of a request's counts, and their costs, cannot
// overflow into small or negative numbers that would slip past limits.
const MaxTokenCount = 1 << 40

// Bounded returns u with every count within 0 and MaxTokenCount.
func (u Usage) Bounded() Usage {
	for _, n := range []*int64{&u.Input, &u.CacheCreation, &u.CacheCreation1h, &u.CacheRead, &u.Output, &u.Reasoning} {
		*n = min(max(*n, 0), MaxTokenCount)
	}
	return u
}

// PromptTotal is the request's total prompt tokens: Input + CacheCreation +
// CacheRead. It selects the price tier.
func (u Usage) PromptTotal() int64 { return u.Input + u.CacheCreation + u.CacheRead }

// Total is every token of the request, prompt and output.
func (u Usage) Total() int64 { return u.PromptTotal() + u.Output }

// Add returns the bucket-wise sum of u and o, each saturating at the
// bounds of int64 instead of wrapping (store.AddSat): sums of many
// records' usage in reports stay at the largest int64.
func (u Usage) Add(o Usage) Usage {
	return Usage{
		Input:           store.AddSat(u.Input, o.Input),
		CacheCreation:   store.AddSat(u.CacheCreation, o.CacheCreation),
		CacheCreation1h: store.AddSat(u.CacheCreation1h, o.CacheCreation1h),
		CacheRead:       store.AddSat(u.CacheRead, o.CacheRead),
		Output:          store.AddSat(u.Output, o.Output),
		Reasoning:       store.AddSat(u.Reasoning, o.Reasoning),
	}
}

// Source says how a request's usage was obtained.
type Source string

// Usage sources recorded in the ledger.
const (
	// SourceReported is usage reported by the upstream in full.
	SourceReported Source = "reported"
	// SourcePartial is usage of a response the client abandoned: what was
	// delivered before the disconnect, reported or estimated.
	SourcePartial Source = "partial"
	// SourceEstimated is usage the gateway estimated because the upstream
	// reported none.
	SourceEstimated Source = "estimated"
	// SourceUnits marks a task billed by units (images, video seconds)
	// rather than tokens.
	SourceUnits Source = "units"
)
