package routing

import (
	"context"
	"net/http"
	"time"

	"github.com/caddy-air/caddy-air/providers"
)

// Target is where one attempt goes. Report its end with Done, once.
type Target struct {
	// Route is the model served: the request's, or a fallback.
	Route *providers.Route
	// Provider is the provider called.
	Provider *providers.Provider
	// UpstreamModel is the model name to send upstream, "" to keep the
	// client's.
	UpstreamModel string
	// Attempt is the base URL and key called.
	Attempt providers.Attempt
	// Upstream is the upstream called; nil for a pin outside the table.
	Upstream *Upstream
	// Number counts the request's attempts, from 1.
	Number int
	// Fallback is true when Route is a fallback of the request's model.
	Fallback bool

	r      *Router
	start  time.Time
	ended  bool
	try    time.Duration      // the attempt's try timeout, 0 for none
	cancel context.CancelFunc // ends the context of Try, if armed
}

// Deployment names the deployment called, "provider/model".
func (t *Target) Deployment() string {
	if t.Upstream != nil {
		return t.Upstream.dep.name
	}
	return t.Provider.Name
}

// Outcome is how an attempt ended.
type Outcome struct {
	// Status is the upstream's answer status, 0 when none came.
	Status int
	// Err is why no answer came (a connection error), nil otherwise.
	Err error
	// Timeout is set when no answer came within the provider's timeout,
	// or the answer stalled.
	Timeout bool
	// Canceled is set when the client left; the upstream is not blamed.
	Canceled bool
	// Broken is set when an answer that had begun was cut or carried an
	// error event.
	Broken bool
	// Quota is set when the answer says the key's quota is spent.
	Quota bool
	// RetryAfter is the answer's Retry-After, 0 when absent.
	RetryAfter time.Duration
	// TTFB is the time from the attempt's start to the response headers.
	TTFB time.Duration
}

// Retryable reports an answer status after which the request moves on to
// another attempt, when nothing was written to the client: 429, 5xx, and
// the statuses that blame the key itself (KeyRejected). A 403 is not one:
// it refuses this request (a model the account may not use, a region),
// and it goes back to its client.
func Retryable(status int) bool {
	return status == http.StatusTooManyRequests || status >= 500 || KeyRejected(status)
}

// KeyRejected reports a status that is evidence about the provider key
// rather than the request: 401 (the key is invalid or revoked) and 402
// (the key's account cannot pay). Such a key leaves rotation for every
// request. A 403 is not evidence: providers answer it for one request
// (OpenAI's "project does not have access to model", DashScope's
// Model.AccessDenied), so one client could otherwise take every key out
// of service for everyone.
func KeyRejected(status int) bool {
	return status == http.StatusUnauthorized || status == http.StatusPaymentRequired
}

// Done records how the attempt ended: a breaker or a cooldown may change,
// a key may leave rotation, the deployment's latency learns. Calling it
// again does nothing.
func (t *Target) Done(o Outcome) {
	if t.ended {
		return
	}
	t.ended = true
	if t.cancel != nil {
		t.cancel()
	}
	u := t.Upstream
	if u == nil {
		return
	}
	u.release()
	r, now := t.r, t.r.now()
	switch {
	case o.Canceled:
		u.unprobe()
	case KeyRejected(o.Status) || o.Quota:
		r.rejectKey(u, now, o.Status)
	case o.Status == http.StatusTooManyRequests:
		d := o.RetryAfter
		if d <= 0 {
			d = u.prov.opts.Cooldown
		}
		r.cool(u, now, d)
	case o.Err != nil || o.Timeout || o.Broken || o.Status >= 500:
		if o.RetryAfter > 0 {
			r.cool(u, now, o.RetryAfter)
		}
		r.failed(u, now)
	default:
		if o.Status < 400 && o.TTFB > 0 {
			u.dep.observeTTFB(o.TTFB)
		}
		r.succeeded(u)
	}
}
