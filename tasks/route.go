package tasks

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/caddy-air/caddy-air/routing"
	"github.com/caddy-air/caddy-air/telemetry"
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

// pendingAttempt is a failed attempt whose metric waits to know whether
// another attempt followed.
type pendingAttempt struct {
	provider, result string
}

// submit sends the job upstream, attempt by attempt as the router plans
// them. It moves on to the next attempt after one that got no answer at
// all or answered 429, 5xx, 401 or 402; any other answer (403 too), and a
// timeout, ends it. With no attempt left it returns the last attempt's
// error, with that attempt's call (out nil), or, when none could be made,
// an UpstreamError naming the wait and no call.
func (s *Service) submit(ctx context.Context, t *Task, r *request, ad adapter) (*submitted, error) {
	plan := s.router.Plan(routing.Request{Route: r.route, NonIdempotent: true})
	var last error
	var lastCall *submitted
	var pending *pendingAttempt
	for {
		tg, err := plan.Next(ctx)
		if pending != nil {
			s.attempted(pending.provider, pending.result, err == nil)
			pending = nil
		}
		if err != nil {
			if last != nil {
				return lastCall, last
			}
			return nil, unavailableError(err)
		}
		c := &call{client: s.client, attempt: tg.Attempt, bases: tg.Provider.BaseURLs, kind: t.Type, model: r.model, maxDepth: s.maxDepth,
			buffers: s.buffers, provider: tg.Provider.Name, deployment: tg.Deployment()}
		if tg.UpstreamModel != "" {
			c.model = tg.UpstreamModel
		}
		if tg.Fallback {
			c.servedModel = tg.Route.Pattern
		}
		actx, span := startSubmit(ctx, t, tg)
		// A create is NonIdempotent: its attempts get no try timeout, and
		// one that timed out all the same would not be resubmitted.
		actx, headers := tg.Try(actx)
		start := time.Now()
		out, err := ad.submit(actx, c, r)
		headers()
		result := s.submitDone(span, tg, c, out, err, time.Since(start), t.User)
		tg.LogAttempt(s.log, routing.AttemptLog{RequestID: t.ID, Operation: t.Type, Model: t.Model, Status: c.status,
			Result: result, Err: err, Delivered: err == nil})
		if err == nil {
			s.attempted(tg.Provider.Name, result, false)
			return &submitted{out: out, call: c, target: tg}, nil
		}
		last, lastCall = err, &submitted{call: c, target: tg}
		if !resubmittable(err) || ctx.Err() != nil {
			s.attempted(tg.Provider.Name, result, false)
			return lastCall, last
		}
		pending = &pendingAttempt{provider: tg.Provider.Name, result: result}
	}
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

// attempted counts a submission attempt, if an observer is set.
func (s *Service) attempted(provider, result string, retried bool) {
	if s.attempts != nil {
		s.attempts.Attempt(provider, result, retried)
	}
}

// startSubmit starts the span of the submission attempt to tg.
func startSubmit(ctx context.Context, t *Task, tg *routing.Target) (context.Context, trace.Span) {
	return telemetry.StartAttempt(ctx, telemetry.Attempt{
		Operation: t.Type, Provider: tg.Provider.Name, Model: t.Model, Number: tg.Number, BaseURL: tg.Attempt.BaseURL, RequestID: t.ID,
	})
}

// submitDone is the one hook of a submission attempt's end: its span, the
// provider's health, and what the router learns (breaker, cooldown,
// rejected key, latency). It returns the attempt's metric result. A
// failure is any result but success or the provider refusing the request
// itself (a 4xx other than 429).
func (s *Service) submitDone(span trace.Span, tg *routing.Target, c *call, out *outcome, err error, took time.Duration, user string) string {
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
	tg.Done(o)
	s.health.RecordFrom(tg.Provider.Name, user, !fault)
	telemetry.EndAttempt(span, res)
	return result
}
