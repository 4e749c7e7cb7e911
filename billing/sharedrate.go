package billing

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/caddy-air/caddy-air/apierror"
)

// Shared rate limits: every RPM and TPM limit is a token bucket of the
// backend (store.RateLimits), shared by every instance. An instance takes
// units from it in batches of up to 1/rateParts of the limit and admits
// requests from its local batch in memory; units it did not use within
// rateHold are dropped (they stay taken: the error is on the side of
// admitting less). Every admitted request's units came from the shared
// bucket, so across instances a limit admits no more than one instance
// would; it may admit up to limit/rateParts units less per instance (its
// unused batch), and token usage beyond the estimates reaches the shared
// bucket within sharedTick.

// Tunables of shared rate limits.
const (
	// rateParts sizes batches: 1/rateParts of the limit.
	rateParts = 100
	// rateHold is how long units of a batch may wait to be used.
	rateHold = time.Second
)

// rateWindow is the window of RPM and TPM limits.
const rateWindow = time.Minute

// localBucket holds the units an instance took from a shared bucket and
// has not used; level is negative when requests used more tokens than
// estimated and the backend has not been told yet.
type localBucket struct {
	level int64
	at    time.Time // when the positive level was taken
	limit int64
}

// rateKey names the shared bucket of a subject's limit ("rpm", "tpm").
func rateKey(kind string, sk subjectKey) string { return kind + "/" + string(sk.scope) + "/" + sk.id }

// takeRates takes a request and tokens for each subject with rate
// limits, or returns the rate_limit_exceeded error of the longest wait.
func (sh *shared) takeRates(h *hold, subjects []subjectKey, limits []Limits, now time.Time) *apierror.Error {
	var limited *apierror.Error
	var longest time.Duration
	for i, sk := range subjects {
		for _, r := range []struct {
			kind  string
			limit int64
			n     int64
			what  string
		}{
			{"rpm", limits[i].RPM, 1, "%d requests per minute"},
			{"tpm", limits[i].TPM, max(h.tokens, 1), "%d tokens per minute"},
		} {
			if r.limit <= 0 {
				continue
			}
			n := min(r.n, r.limit)
			key := rateKey(r.kind, sk)
			wait, err := sh.take(key, n, r.limit, now)
			if err != nil {
				return apierror.New(http.StatusServiceUnavailable, apierror.TypeServer, "rate_limit_unavailable", "The rate limit could not be checked; please try again.")
			}
			if wait > 0 {
				if wait > longest {
					longest, limited = wait, rateLimited(sk, fmt.Sprintf(r.what, r.limit), wait)
				}
				continue
			}
			h.rates = append(h.rates, rateHeld{key: key, n: n, limit: r.limit, tokens: r.kind == "tpm"})
		}
	}
	return limited
}

// rateHeld is units a request took from a shared bucket.
type rateHeld struct {
	key    string
	n      int64
	limit  int64
	tokens bool // a TPM bucket: settled usage corrects n
}

// take takes n units of bucket key from the local batch, or a new batch
// from the backend; it returns how long to wait if the backend has none.
func (sh *shared) take(key string, n, limit int64, now time.Time) (time.Duration, error) {
	sh.mu.Lock()
	lb := sh.buckets[key]
	if lb == nil {
		lb = &localBucket{}
		sh.buckets[key] = lb
	}
	lb.limit = limit
	if lb.level > 0 && now.Sub(lb.at) >= rateHold {
		lb.level = 0
	}
	if lb.level >= n {
		lb.level -= n
		sh.mu.Unlock()
		return 0, nil
	}
	debt := min(lb.level, 0)
	if debt < 0 {
		lb.level = 0
	}
	have := lb.level
	lb.level = 0
	sh.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), backendTimeout)
	defer cancel()
	if debt < 0 {
		if err := sh.rl.Adjust(ctx, key, debt, limit, rateWindow, now); err != nil {
			return 0, err
		}
	}
	need := n - have
	want := min(need+limit/rateParts, limit)
	wait, err := sh.rl.Take(ctx, key, want, limit, rateWindow, now)
	if err == nil && wait > 0 && want > need {
		want = need
		wait, err = sh.rl.Take(ctx, key, want, limit, rateWindow, now)
	}
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if err != nil || wait > 0 {
		lb.level += have
		return wait, err
	}
	lb.level += have + want - n
	lb.at = now
	return 0, nil
}

// giveRates gives back the units a request took, to the local batches.
func (sh *shared) giveRates(h *hold) {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	for _, r := range h.rates {
		if lb := sh.buckets[r.key]; lb != nil {
			lb.level = min(lb.level+r.n, r.limit)
		}
	}
	h.rates = nil
}

// settleRates corrects the token estimate of a settled request by its
// usage; the local batch takes the difference.
func (sh *shared) settleRates(h *hold, rec *Record, now time.Time) {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	for _, r := range h.rates {
		if !r.tokens {
			continue
		}
		if lb := sh.buckets[r.key]; lb != nil {
			lb.level = min(lb.level+r.n-clampTokens(rec.Usage.Total()), r.limit)
		}
	}
}

// flushRates hands the local debts (usage beyond estimates) to the shared
// buckets, and forgets batches that have long been empty.
func (sh *shared) flushRates(ctx context.Context, now time.Time) {
	type debt struct {
		key      string
		n, limit int64
	}
	var debts []debt
	sh.mu.Lock()
	for key, lb := range sh.buckets {
		switch {
		case lb.level < 0:
			debts = append(debts, debt{key, lb.level, lb.limit})
			lb.level = 0
		case now.Sub(lb.at) > rateWindow:
			delete(sh.buckets, key)
		}
	}
	sh.mu.Unlock()
	for _, d := range debts {
		if err := sh.rl.Adjust(ctx, d.key, d.n, d.limit, rateWindow, now); err != nil {
			sh.mu.Lock()
			if lb := sh.buckets[d.key]; lb != nil {
				lb.level += d.n
			}
			sh.mu.Unlock()
		}
	}
}

// owe takes n units of bucket key that a request used without taking
// them (a task charged after a restart); the backend is told within
// sharedTick.
func (sh *shared) owe(key string, n, limit int64) {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	lb := sh.buckets[key]
	if lb == nil {
		lb = &localBucket{}
		sh.buckets[key] = lb
	}
	lb.limit = limit
	lb.level -= n
}
