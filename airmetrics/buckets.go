package airmetrics

// Histogram buckets. The GenAI ones are the boundaries the OpenTelemetry
// GenAI semantic conventions advise, extended where LLM traffic goes
// beyond them.
var (
	// TokenBuckets are powers of 4 from 1 to 4^13 (67M) tokens, as
	// advised for gen_ai.client.token.usage: a one-word answer and a 1M
	// token context both land in a bucket of their own order of magnitude.
	TokenBuckets = []float64{1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864}

	// DurationBuckets double from 10 ms to about 11 min: the advised
	// 0.01–81.92 s, extended by three steps because long reasoning
	// answers and image generations take minutes.
	DurationBuckets = []float64{0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92, 163.84, 327.68, 655.36}

	// TTFTBuckets are the advised boundaries for time to first token,
	// 1 ms to 10 s, extended to 60 s for models that think first.
	TTFTBuckets = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 30, 60}

	// TPOTBuckets are the advised boundaries for time per output token,
	// 10 ms to 2.5 s, with 1 and 5 ms added in front for fast models and
	// cached answers.
	TPOTBuckets = []float64{0.001, 0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1, 2.5}

	// CommitBuckets span a ledger commit: a sync takes about 0.3 ms on a
	// fast disk and tens of ms on a slow one; beyond a second the storage
	// is in trouble.
	CommitBuckets = []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5}
)
