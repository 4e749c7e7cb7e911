// Package upstream makes the upstream attempts of every endpoint: one
// loop over a routing.Plan (Runner.Run), one hook told of each attempt's
// end (Observer), and one way to build and send a request to a provider
// with its credentials (NewRequest, Send). Chat, messages, responses,
// embeddings and the other proxied endpoints (package chatproxy), task
// submissions (package tasks), the background-response poller, the
// routing health checks and count_tokens all go through it. It does not
// import Caddy.
package upstream

import (
	"context"
	"errors"

	"go.uber.org/zap"

	"github.com/caddy-air/caddy-air/health"
	"github.com/caddy-air/caddy-air/routing"
	"github.com/caddy-air/caddy-air/telemetry"
)

// Observer is told of every upstream attempt, by every endpoint: the
// provider's name, the attempt's result (one of the routing.Attempt*
// constants) and whether another attempt followed it. The attempt metric
// implements it.
type Observer interface {
	Attempt(provider, result string, retried bool)
}

// ErrSkip, from Attempter.Prepare, passes over a target that cannot take
// the request (a fallback that cannot serve all of a batch's lines).
var ErrSkip = errors.New("upstream: target skipped")

// Runner makes the attempts of requests. Each attempt gets a span
// (telemetry.StartAttempt, when the request's span records), its try
// timeout (routing.Target.Try), and at its end one bookkeeping step: the
// attempt metric (Observer), the provider's health (Health), what the
// router learns (routing.Target.Done: breaker, cooldown, rejected key,
// latency), the attempt's log line (routing.Target.LogAttempt) and the
// span's end. Its zero value is usable: it logs, counts and observes
// nothing.
type Runner struct {
	// Logger receives the log line of every attempt; nil disables them.
	Logger *zap.Logger
	// Health, when set, counts the result of every attempt per provider.
	Health *health.Tracker
	// Observer, if set, is told of every attempt.
	Observer Observer
}

// Spec names a request in its attempts' spans, log lines and health.
type Spec struct {
	// Operation names the endpoint: chat, messages, responses,
	// embeddings, count_tokens, image or video.
	Operation string
	// Model is the model the client asked for.
	Model string
	// RequestID is the request's id (its ledger record's), or the task's.
	RequestID string
	// Client names whose request it is (the user), so that the
	// provider's health counts the clients its failures came from.
	Client string
}

// Attempter makes the attempts of one request, to the targets the
// Runner's plan gives.
type Attempter interface {
	// Prepare readies the attempt to t before it starts (its body for
	// t's model, its protocol). An error ends the run before the attempt
	// starts: t is done as cancelled, nothing is counted, and Run
	// returns the error; ErrSkip passes over t to the plan's next target
	// the same way.
	Prepare(t *routing.Target) error
	// Attempt makes the attempt to t under ctx, which carries the
	// attempt's span and is bounded by t's try timeout. headers is the
	// bound's (see routing.Target.Try): call it as soon as the response
	// headers came or the attempt failed otherwise; when it reports
	// false, the attempt timed out. Attempt returns how the attempt
	// ended.
	Attempt(ctx context.Context, t *routing.Target, headers func() bool) End
}

// End is how an attempt ended, for its bookkeeping.
type End struct {
	// Result is the attempt's metric result, one of the routing.Attempt*
	// constants.
	Result string
	// Status is the upstream's answer status for the log line, 0 when
	// none came.
	Status int
	// Err is why the attempt failed, for the log line; nil when it did
	// not.
	Err error
	// Span is the end of the attempt's span.
	Span telemetry.Result
	// Outcome is what the router learns.
	Outcome routing.Outcome
	// Fault counts the attempt as a failure of the provider in its
	// health, and Uncounted leaves it out (a client that left).
	Fault, Uncounted bool
	// Delivered is set when the attempt's answer went to the client.
	Delivered bool
	// Retry moves on to the plan's next attempt. The attempt's metric
	// waits until the plan says whether one follows.
	Retry bool
}

// Run makes the attempts of one request, s, as plan gives them, until one
// ends without End.Retry; it then returns nil. When the plan has no
// attempt left it returns the plan's error: *routing.Unavailable, or
// ctx's error when the client left. When Prepare fails it returns that
// error. ctx is the request's; each attempt's context is under it.
func (r *Runner) Run(ctx context.Context, plan *routing.Plan, s *Spec, a Attempter) error {
	var pending bool // the last attempt asked for a retry: its metric waits
	var pendingProvider, pendingResult string
	for {
		t, err := plan.Next(ctx)
		if pending {
			r.observe(pendingProvider, pendingResult, err == nil)
			pending = false
		}
		if err != nil {
			return err
		}
		if err := a.Prepare(t); err != nil {
			t.Done(routing.Outcome{Canceled: true})
			if err == ErrSkip {
				continue
			}
			return err
		}
		actx, span := telemetry.StartAttempt(ctx, telemetry.Attempt{
			Operation: s.Operation, Provider: t.Provider.Name, Model: s.Model,
			Number: t.Number, BaseURL: t.Attempt.BaseURL, RequestID: s.RequestID,
		})
		actx, headers := t.Try(actx)
		e := a.Attempt(actx, t, headers)
		if !e.Retry {
			r.observe(t.Provider.Name, e.Result, false)
		}
		if !e.Uncounted {
			r.Health.RecordFrom(t.Provider.Name, s.Client, !e.Fault)
		}
		t.Done(e.Outcome)
		t.LogAttempt(r.Logger, routing.AttemptLog{RequestID: s.RequestID, Operation: s.Operation, Model: s.Model,
			Status: e.Status, Result: e.Result, Err: e.Err, Delivered: e.Delivered})
		telemetry.EndAttempt(span, e.Span)
		if !e.Retry {
			return nil
		}
		pending, pendingProvider, pendingResult = true, t.Provider.Name, e.Result
	}
}

// observe tells the observer, if any, of an attempt.
func (r *Runner) observe(provider, result string, retried bool) {
	if r.Observer != nil {
		r.Observer.Attempt(provider, result, retried)
	}
}
