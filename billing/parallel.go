package billing

import (
	"fmt"
	"net/http"

	"github.com/caddy-air/caddy-air/apierror"
)

// max_parallel_requests: a subject's requests in flight on this instance,
// counted from admission until the exchange ends (Limits.MaxParallel).

// checkParallel returns a rate_limit_exceeded error if the account has
// its max_parallel_requests in flight.
func (acc *account) checkParallel(sk subjectKey) *apierror.Error {
	if !acc.hasLimits || acc.limits.MaxParallel <= 0 || acc.inflight < acc.limits.MaxParallel {
		return nil
	}
	msg := fmt.Sprintf("Too many parallel requests for %s: at most %d may run at once. Please try again when one of them has finished.",
		describe(sk), acc.limits.MaxParallel)
	e := apierror.New(http.StatusTooManyRequests, apierror.TypeRateLimit, "rate_limit_exceeded", msg)
	e.RetryAfter = 1
	return e
}

// takeParallel counts a request in the subjects' requests in flight, or
// refuses it if one of them has its max_parallel_requests in flight.
func (b *Budgets) takeParallel(subjects []subjectKey) *apierror.Error {
	b.mu.Lock()
	defer b.mu.Unlock()
	accs := make([]*account, len(subjects))
	for i, sk := range subjects {
		accs[i] = b.account(sk)
		if err := accs[i].checkParallel(sk); err != nil {
			return err
		}
	}
	for _, acc := range accs {
		acc.inflight++
	}
	return nil
}

// endParallel drops h from its subjects' requests in flight, once: later
// calls are no-ops.
func (b *Budgets) endParallel(h *hold) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.endParallelLocked(h)
}

// endParallelLocked is endParallel with b.mu held.
func (b *Budgets) endParallelLocked(h *hold) {
	if !h.parallel {
		return
	}
	h.parallel = false
	for _, sk := range h.subjects {
		b.account(sk).inflight--
	}
}
