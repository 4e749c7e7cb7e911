package chatproxy

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/caddy-air/caddy-air/apierror"
	"github.com/caddy-air/caddy-air/billing"
	"github.com/caddy-air/caddy-air/dialect"
	"github.com/caddy-air/caddy-air/routing"
	"github.com/caddy-air/caddy-air/telemetry"
	"github.com/caddy-air/caddy-air/upstream"
)

// serving is one Serve: the upstream.Attempter of its attempts, and what
// they leave for its answer.
type serving struct {
	p   *Proxy
	c   *Call
	w   http.ResponseWriter
	r   *http.Request
	res Result
	// leg and body are the current attempt's (Prepare).
	leg  legged
	body []byte
	// unprepared is set when an attempt's leg or body could not be made.
	unprepared bool
	// failed is the last attempt's answer, when it was a 429 or 5xx, and
	// failedLeg its call and writer.
	failed    *failure
	failedLeg legged
	// tryTimedOut is the try timeout the last attempt exceeded, 0 if it
	// did not.
	tryTimedOut time.Duration
}

var _ upstream.Attempter = (*serving)(nil)

// Prepare implements upstream.Attempter: it makes the leg and body of
// the attempt to t.
func (s *serving) Prepare(t *routing.Target) error {
	s.failed = nil
	s.res.Attempts, s.res.Provider, s.res.Target = t.Number, t.Provider.Name, t
	leg, body, err := s.p.legFor(s.c, s.w, t)
	if err != nil {
		s.res.Err, s.unprepared = err, true
		return err
	}
	s.leg, s.body = leg, body
	return nil
}

// Attempt implements upstream.Attempter: it sends the attempt to t and,
// unless its answer is one to retry elsewhere, delivers it.
func (s *serving) Attempt(ctx context.Context, t *routing.Target, headers func() bool) upstream.End {
	p, c, r, res := s.p, s.c, s.r, &s.res
	timeout := t.Provider.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	sent := time.Now()
	at := p.send(ctx, s.leg.c, s.body, t.Attempt, timeout)
	if !headers() && at.err == nil {
		at.err = routing.ErrTryTimeout // the answer came as the bound passed: dropped all the same
	}
	res.Wrote = res.Wrote || at.wrote.Load()
	s.tryTimedOut = 0
	if at.err != nil {
		at.close()
		res.Err = at.err
		switch {
		case r.Context().Err() != nil:
			res.Status, res.Outcome = 499, OutcomeCanceled
			res.Usage, res.Source = promptEstimate(c), billing.SourceEstimated
			return failedEnd(routing.AttemptCanceled, 0, errTypeCanceled, at.err, routing.Outcome{Canceled: true}, false)
		case routing.TimedOut(at.ctx, at.err):
			// No headers within the try timeout: abandoned (its
			// connection closed), and the next attempt goes.
			s.tryTimedOut, res.Err = t.TryTimeout(), routing.ErrTryTimeout
			return failedEnd(routing.AttemptTimeout, 0, errTypeTimeout, routing.ErrTryTimeout, routing.Outcome{Timeout: true}, true)
		case context.Cause(at.ctx) == errTimeout:
			res.Status, res.Outcome = http.StatusGatewayTimeout, OutcomeTimeout
			res.Usage, res.Source = promptEstimate(c), billing.SourceEstimated
			res.Held = heldError(c.Wire.ErrorShape(), apierror.New(http.StatusGatewayTimeout, apierror.TypeUpstream, "upstream_timeout",
				fmt.Sprintf("the upstream provider did not answer within %s", timeout)))
			return failedEnd(routing.AttemptTimeout, 0, errTypeTimeout, errTimeout, routing.Outcome{Timeout: true}, false)
		}
		return failedEnd(routing.AttemptConnectError, 0, errTypeUnavailable, at.err, routing.Outcome{Err: at.err}, true)
	}
	status := at.resp.StatusCode
	if routing.Retryable(status) {
		f := readFailure(c, t.Attempt, at.resp)
		at.close()
		if status == http.StatusTooManyRequests || status >= 500 {
			s.failed, s.failedLeg = f, s.leg
		}
		res.Err = fmt.Errorf("upstream answered %d", status)
		return failedEnd(routing.StatusResult(status), status, telemetry.StatusErrorType(status), res.Err,
			routing.Outcome{Status: status, Quota: routing.QuotaError(f.raw),
				RetryAfter: routing.ParseRetryAfter(f.header.Get("Retry-After"), time.Now()), TTFB: time.Since(sent)}, true)
	}
	ttfb := time.Since(sent)
	// A traced attempt collects its answer's model and finish reasons.
	var meta *dialect.Meta
	recording := trace.SpanFromContext(ctx).IsRecording()
	if recording {
		meta = new(dialect.Meta)
	}
	res.Attempt, res.Writer = t.Attempt, s.leg.w
	p.deliver(s.leg.w, r, s.leg.c, at, res, meta)
	at.close()
	return deliveredEnd(res, meta, routing.Outcome{Status: status, TTFB: ttfb}, recording)
}
