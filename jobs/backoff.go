package jobs

import (
	"time"

	"github.com/cenkalti/backoff/v5"
)

// Backoff spaces the polls of a job: after consecutive failures the wait
// doubles from Initial up to Max (Next), and a provider's Retry-After is
// honoured up to Max only (Wait), so that no provider can put a job's
// polls off past the job's own deadline.
type Backoff struct {
	// Initial is the wait after the first failure.
	Initial time.Duration
	// Max bounds every wait, a Retry-After's included.
	Max time.Duration
}

// Next is the wait before the next poll after failures consecutive
// failures (at least 1): Initial doubled per failure after the first,
// at least retryAfter, at most Max.
func (b Backoff) Next(failures int, retryAfter time.Duration) time.Duration {
	bo := &backoff.ExponentialBackOff{InitialInterval: b.Initial, Multiplier: 2, MaxInterval: b.Max}
	bo.Reset()
	d := bo.NextBackOff()
	for i := 1; i < failures && d < b.Max; i++ {
		d = bo.NextBackOff()
	}
	return b.Wait(d, retryAfter)
}

// Wait is wait, or retryAfter if that is longer, at most Max.
func (b Backoff) Wait(wait, retryAfter time.Duration) time.Duration {
	return min(max(wait, retryAfter), b.Max)
}
