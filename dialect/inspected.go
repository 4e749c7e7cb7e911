package dialect

// Inspected is what the gateway needs to know about a client's request
// body: each dialect's Inspect functions read it (openai.InspectChat,
// anthropic.InspectMessages, responses.InspectResponses, …), refusing what
// the provider might read differently.
type Inspected struct {
	// Model is the model id the client asked for.
	Model string
	// Stream is true when the client asked for an SSE stream.
	Stream bool
	// IncludeUsage is true when an OpenAI client set
	// stream_options.include_usage to true.
	IncludeUsage bool
	// MaxTokens is max_completion_tokens, else max_tokens, else zero.
	MaxTokens int64
	// Background is true when a Responses client asked for a background
	// response.
	Background bool
	// PreviousResponseID is a Responses request's previous_response_id.
	PreviousResponseID string
	// PromptBytes is the size of the prompt's text (see Estimate); a
	// quarter of it estimates the prompt tokens when the upstream reports
	// none.
	PromptBytes int
	// Characters is the number of characters (runes) of a speech
	// request's input, which a character price bills.
	Characters int64
	// Format is a speech request's response_format, "mp3" when unset.
	Format string
	// Documents is the number of documents of a rerank request.
	Documents int64
	// AudioMillis is the duration of a transcription's audio file: read
	// from it (WAV, MP3), or, when AudioEstimated, estimated from its
	// size at 128 kbit/s.
	AudioMillis    int64
	AudioEstimated bool

	// Located places in the body the values PrepareBody may edit, so that
	// it need not look for them again.
	Located Located
}

// Located places in a request body the values PrepareBody may edit: the
// model's (a multipart body's model field, for PrepareMultipart), and
// stream_options and its include_usage.
type Located struct {
	Model, StreamOptions, IncludeUsage Span
}

// Span is the place of a member's value in a request body, zero when the
// member is absent: a value never starts at offset 0, where the body's
// object opens.
type Span struct{ At, End int }
