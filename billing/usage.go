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
	// AudioInput is the part of Input that is audio. It is priced at the
	// model's audio input price (see PriceTable).
	AudioInput int64 `json:"audio_input_tokens,omitempty"`
	// AudioOutput is the part of Output that is audio, priced at the
	// model's audio output price.
	AudioOutput int64 `json:"audio_output_tokens,omitempty"`
	// ImageInput is the part of Input that is image tokens of an image
	// model (OpenAI Images' input_tokens_details.image_tokens), priced at
	// the model's image token input price.
	ImageInput int64 `json:"image_input_tokens,omitempty"`
	// ImageOutput is the part of Output that is generated image tokens,
	// priced at the model's image token output price.
	ImageOutput int64 `json:"image_output_tokens,omitempty"`
	// WebSearches counts the web searches the provider ran for the request
	// (Anthropic's server_tool_use.web_search_requests, the Responses
	// API's web_search_call items).
	WebSearches int64 `json:"web_searches,omitempty"`
	// WebFetches counts Anthropic's web fetches
	// (server_tool_use.web_fetch_requests).
	WebFetches int64 `json:"web_fetches,omitempty"`
	// FileSearches counts the Responses API's file_search_call items.
	FileSearches int64 `json:"file_searches,omitempty"`
	// CodeSessions counts the code execution containers the request used:
	// the distinct containers of the Responses API's code_interpreter_call
	// items, and Anthropic's code execution container.
	CodeSessions int64 `json:"code_sessions,omitempty"`
	// ImageCalls counts the Responses API's image_generation_call items.
	ImageCalls int64 `json:"image_generation_calls,omitempty"`
	// Characters counts the input characters of a speech request, priced
	// by the model's character rule (priceunits.go).
	Characters int64 `json:"characters,omitempty"`
	// AudioMillis is the duration of the audio of a transcription or
	// translation in milliseconds, priced by the model's audio_second
	// rule.
	AudioMillis int64 `json:"audio_ms,omitempty"`
	// SearchUnits counts a rerank's search units, priced by the model's
	// search_unit rule.
	SearchUnits int64 `json:"search_units,omitempty"`
}

// Charge kinds: the names of the charges of a Usage beyond plain tokens,
// as Record.Unpriced lists those the price file has no price for.
const (
	ChargeAudioInput  = "audio_input"
	ChargeAudioOutput = "audio_output"
	ChargeImageInput  = "image_input"
	ChargeImageOutput = "image_output"
	ChargeWebSearch   = "web_search"
	ChargeWebFetch    = "web_fetch"
	ChargeFileSearch  = "file_search"
	ChargeCodeSession = "code_session"
	ChargeImageCall   = "image_generation"
)

// hasCharges reports whether u has a charge beyond plain tokens.
func (u *Usage) hasCharges() bool {
	return u.AudioInput|u.AudioOutput|u.ImageInput|u.ImageOutput|u.WebSearches|u.WebFetches|u.FileSearches|
		u.CodeSessions|u.ImageCalls != 0
}

// callCount is a number of priced calls of one charge kind.
type callCount struct {
	kind string
	n    int64
}

// calls returns u's per-call counts with their charge kinds.
func (u *Usage) calls() [5]callCount {
	return [5]callCount{
		{ChargeWebSearch, u.WebSearches}, {ChargeWebFetch, u.WebFetches}, {ChargeFileSearch, u.FileSearches},
		{ChargeCodeSession, u.CodeSessions}, {ChargeImageCall, u.ImageCalls},
	}
}

// MaxTokenCount bounds every token count the gateway takes from outside:
// a count an upstream reports and the output a client's max_tokens asks
// for are read as at most this (about 1.1 trillion, beyond any real
// context), so that sums of a request's counts, and their costs, cannot
// overflow into small or negative numbers that would slip past limits.
const MaxTokenCount = 1 << 40

// Bounded returns u with every count within 0 and MaxTokenCount.
func (u Usage) Bounded() Usage {
	for _, n := range []*int64{&u.Input, &u.CacheCreation, &u.CacheCreation1h, &u.CacheRead, &u.Output, &u.Reasoning,
		&u.AudioInput, &u.AudioOutput, &u.ImageInput, &u.ImageOutput,
		&u.WebSearches, &u.WebFetches, &u.FileSearches, &u.CodeSessions, &u.ImageCalls,
		&u.Characters, &u.AudioMillis, &u.SearchUnits} {
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
		AudioInput:      store.AddSat(u.AudioInput, o.AudioInput),
		AudioOutput:     store.AddSat(u.AudioOutput, o.AudioOutput),
		ImageInput:      store.AddSat(u.ImageInput, o.ImageInput),
		ImageOutput:     store.AddSat(u.ImageOutput, o.ImageOutput),
		WebSearches:     store.AddSat(u.WebSearches, o.WebSearches),
		WebFetches:      store.AddSat(u.WebFetches, o.WebFetches),
		FileSearches:    store.AddSat(u.FileSearches, o.FileSearches),
		CodeSessions:    store.AddSat(u.CodeSessions, o.CodeSessions),
		ImageCalls:      store.AddSat(u.ImageCalls, o.ImageCalls),
		Characters:      store.AddSat(u.Characters, o.Characters),
		AudioMillis:     store.AddSat(u.AudioMillis, o.AudioMillis),
		SearchUnits:     store.AddSat(u.SearchUnits, o.SearchUnits),
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
