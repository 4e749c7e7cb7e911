package tasks

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/caddy-air/caddy-air/routing"
	"github.com/caddy-air/caddy-air/telemetry"
	"github.com/caddy-air/caddy-air/upstream"
)

// A create's submissions go where the router (package routing) sends
// them, as chat requests do: the model's deployments, balanced, then its
// fallbacks, skipping upstreams in cooldown or whose breaker is open, and
// pacing a retry on an upstream already tried. The submission that
// answers decides the deployment that serves, polls and bills the task.

// submitted is the answer of the submission that went through.
type submitted struct {
	out    *outcome
	call   *call
	target *routing.Target
}

// submit sends the job upstream, attempt by attempt as the router plans
// them (upstream.Runner). It moves on to the next attempt after one that
// got no answer at all or answered 429, 5xx, 401 or 402; any other
// answer (403 too), and a timeout, ends it. With no attempt left it
// returns the last attempt's error, with that attempt's call (out nil),
// or, when none could be made, an UpstreamError naming the wait and no
// call.
func (s *Service) submit(ctx context.Context, t *Task, r *request, ad adapter) (*submitted, error) {
	plan := s.router.Plan(routing.Request{Route: r.route, NonIdempotent: true})
	sub := submission{s: s, ctx: ctx, t: t, r: r, ad: ad}
	run := upstream.Runner{Logger: s.log, Health: s.health, Observer: s.attempts}
	spec := upstream.Spec{Operation: t.Type, Model: t.Model, RequestID: t.ID, Client: t.User}
	err := run.Run(ctx, plan, &spec, &sub)
	switch {
	case sub.last == nil && err == nil:
		return sub.done, nil
	case sub.last != nil:
		return sub.lastCall, sub.last
	}
	return nil, unavailableError(err)
}

// submission is one create's submissions: the upstream.Attempter of
// submit.
type submission struct {
	s   *Service
	ctx context.Context // the create's
	t   *Task
	r   *request
	ad  adapter
	c   *call // the current attempt's (Prepare)
	// done is the submission that went through; last and lastCall the
	// last one's error and call, when it failed.
	done     *submitted
	last     error
	lastCall *submitted
}

var _ upstream.Attempter = (*submission)(nil)

// Prepare implements upstream.Attempter: the call of the submission to
// tg.
func (sub *submission) Prepare(tg *routing.Target) error {
	s, t, r := sub.s, sub.t, sub.r
	c := &call{client: s.client, p: tg.Provider, attempt: tg.Attempt, kind: t.Type, model: r.model, maxDepth: s.maxDepth,
		buffers: s.buffers, provider: tg.Provider.Name, deployment: tg.Deployment()}
	if tg.UpstreamModel != "" {
		c.model = tg.UpstreamModel
	}
	if tg.Fallback {
		c.servedModel = tg.Route.Pattern
	}
	sub.c = c
	return nil
}

// Attempt implements upstream.Attempter: it submits the job to tg. A
// create is NonIdempotent: its attempts get no try timeout, and one that
// timed out all the same would not be resubmitted.
func (sub *submission) Attempt(ctx context.Context, tg *routing.Target, headers func() bool) upstream.End {
	c := sub.c
	start := time.Now()
	out, err := sub.ad.submit(ctx, c, sub.r)
	headers()
	e := submitEnd(c, out, err, time.Since(start))
	if err == nil {
		sub.done, sub.last, sub.lastCall = &submitted{out: out, call: c, target: tg}, nil, nil
		return e
	}
	sub.last, sub.lastCall = err, &submitted{call: c, target: tg}
	e.Retry = resubmittable(err) && sub.ctx.Err() == nil
	return e
}

// resubmittable reports whether a failed submission may be sent again,
// elsewhere: it got no answer (not a timeout: the provider may have taken
// the job), or an answer whose status routing retries.
func resubmittable(err error) bool {
	var ue *upstreamError
	if !errors.As(err, &ue) || ue.permanent || ue.name == errTimeout && ue.status == 0 {
		return false
	}
	return ue.status == 0 || routing.Retryable(ue.status)
}

// unavailableError is the task error when the router had no upstream to
// offer: every one in cooldown, open or out of rotation.
func unavailableError(err error) error {
	var un *routing.Unavailable
	if !errors.As(err, &un) {
		return &upstreamError{name: errUpstream, msg: "the task was not submitted", cause: err}
	}
	return &upstreamError{name: errUpstream, retryAfter: un.RetryAfter,
		msg: fmt.Sprintf("no upstream provider of this model could take the task; retry after %d s", un.RetryAfterSeconds())}
}

// submitEnd is how a submission attempt ended, for the runner's
// bookkeeping: its span, the provider's health, what the router learns
// (breaker, cooldown, rejected key, latency), its metric result and its
// log line. A failure is any result but success or the provider refusing
// the request itself (a 4xx other than 429).
func submitEnd(c *call, out *outcome, err error, took time.Duration) upstream.End {
	res := telemetry.Result{Status: c.status, Err: err}
	fault := false
	result := routing.AttemptOK
	o := routing.Outcome{Status: c.status}
	var ue *upstreamError
	switch {
	case err == nil:
		res.Outcome = out.state
		o.TTFB = took
	case errors.As(err, &ue) && ue.status == 0 && ue.name == errTimeout:
		res.ErrorType, fault, result = "timeout", true, routing.AttemptTimeout
		o.Timeout = true
	case errors.As(err, &ue) && ue.status == 0:
		res.ErrorType, fault, result = "unavailable", true, routing.AttemptConnectError
		o.Err = err
	case errors.As(err, &ue) && ue.local:
		// The provider answered; the gateway could not hold the answer.
		res.ErrorType = "gateway_busy"
	case c.status >= 400:
		res.ErrorType = telemetry.StatusErrorType(c.status)
		fault = c.status == http.StatusTooManyRequests || c.status >= 500
		result = routing.StatusResult(c.status)
		if ue != nil {
			o.RetryAfter = ue.retryAfter
		}
	default:
		res.ErrorType, fault = "bad_answer", true
		o.Broken = true
	}
	return upstream.End{Result: result, Status: c.status, Err: err, Span: res, Outcome: o, Fault: fault, Delivered: err == nil}
}
