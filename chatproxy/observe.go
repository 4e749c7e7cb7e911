package chatproxy

import (
	"context"

	"go.opentelemetry.io/otel/trace"

	"github.com/caddy-air/caddy-air/dialect"
	"github.com/caddy-air/caddy-air/routing"
	"github.com/caddy-air/caddy-air/telemetry"
)

// Each upstream attempt gets a span (see package telemetry) when the
// request's span records, and its result is counted in the provider's
// health (Proxy.Health). With tracing off, the span is the request's
// non-recording one, and no response metadata is collected.

// Error types of attempts that got no usable answer; one with an error
// status has the status as its type.
const (
	errTypeUnavailable = "unavailable"
	errTypeTimeout     = "timeout"
	errTypeCanceled    = "canceled"
	errTypeCut         = "upstream_cut"
	errTypeStreamError = "upstream_error"
)

// startAttempt starts the span of the attempt to t.
func startAttempt(ctx context.Context, c *Call, t *routing.Target) (context.Context, trace.Span) {
	return telemetry.StartAttempt(ctx, telemetry.Attempt{
		Operation: c.operation(), Provider: t.Provider.Name, Model: c.Inspected.Model,
		Number: t.Number, BaseURL: t.Attempt.BaseURL, RequestID: c.RequestID,
	})
}

// operation names c's endpoint in spans and logs: c.Operation, or its
// Wire's.
func (c *Call) operation() string {
	if c.Operation != "" {
		return c.Operation
	}
	return c.Wire.Operation()
}

// logAttempt writes the attempt's log line (see routing.Target.LogAttempt).
func (p *Proxy) logAttempt(c *Call, t *routing.Target, status int, result string, err error, delivered bool) {
	t.LogAttempt(p.Logger, routing.AttemptLog{RequestID: c.RequestID, Operation: c.operation(), Model: c.Inspected.Model,
		Status: status, Result: result, Err: err, Delivered: delivered})
}

// ended is how an attempt ended, told to every observer at once by end.
type ended struct {
	// provider and result are the attempt's metric labels (Attempt*).
	provider, result string
	// deferred marks a failed attempt whose metric waits until the next
	// attempt is known (Serve reports it with observe).
	deferred bool
	// status, errType and err describe an attempt that got no usable
	// answer: status is its error status, or 0 when none arrived.
	status  int
	errType string
	err     error
	// res and meta are the delivered answer's, nil for a failed attempt.
	res  *Result
	meta *dialect.Meta
	// outcome is what the router learns.
	outcome routing.Outcome
}

// end is the one hook of an attempt's end: the attempt metric, its log
// line, its span, the provider's health and the router's breaker,
// cooldown and latency.
// An attempt the client cancelled does not count against the provider.
func (p *Proxy) end(span trace.Span, c *Call, t *routing.Target, e *ended) {
	if e.res != nil {
		p.delivered(span, c, t, e)
		return
	}
	if !e.deferred {
		p.observe(t.Provider.Name, e.result, false)
	}
	if e.errType != errTypeCanceled {
		p.Health.RecordFrom(t.Provider.Name, c.Client, false)
	}
	t.Done(e.outcome)
	p.logAttempt(c, t, e.status, e.result, e.err, false)
	telemetry.EndAttempt(span, telemetry.Result{Status: e.status, ErrorType: e.errType, Err: e.err})
}

// delivered ends the attempt whose answer went to the client, with what
// its result and metadata say of it.
func (p *Proxy) delivered(span trace.Span, c *Call, t *routing.Target, e *ended) {
	res, meta := e.res, e.meta
	p.observe(t.Provider.Name, e.result, false)
	var errType string
	switch res.Outcome {
	case OutcomeOK:
	case OutcomePartial, OutcomeCanceled:
		errType = errTypeCanceled
	case OutcomeTimeout:
		errType = errTypeTimeout
	default:
		switch {
		case res.Status >= 400:
			errType = telemetry.StatusErrorType(res.Status)
		case res.Err == nil:
			errType = errTypeStreamError // an error event in the stream
		default:
			errType = errTypeCut
		}
	}
	o := e.outcome
	switch {
	case errType == errTypeCanceled:
		o.Canceled = true
	case errType == errTypeTimeout:
		o.Timeout = true
	case errType == errTypeStreamError || errType == errTypeCut:
		o.Broken = true
	}
	t.Done(o)
	p.logAttempt(c, t, res.Status, e.result, res.Err, true)
	if errType != errTypeCanceled {
		p.Health.RecordFrom(t.Provider.Name, c.Client, !providerFault(res.Status, errType))
	}
	if !span.IsRecording() {
		return
	}
	r := telemetry.Result{Status: res.Status, Outcome: res.Outcome, ErrorType: errType, Err: res.Err}
	if res.Status >= 200 && res.Status < 300 {
		u := res.Usage
		r.HasTokens = true
		r.Tokens = telemetry.Tokens{Input: u.PromptTotal(), Output: u.Output,
			CacheRead: u.CacheRead, CacheCreation: u.CacheCreation, Reasoning: u.Reasoning}
	}
	if meta != nil {
		r.ResponseModel, r.FinishReasons = meta.Model, meta.Finish
	}
	telemetry.EndAttempt(span, r)
}

// providerFault reports whether an attempt that ended with status and
// errType counts as a failure of the provider: any failure but an error
// status that blames the client's request (a 4xx other than 429).
func providerFault(status int, errType string) bool {
	switch {
	case errType == "":
		return false
	case errType == telemetry.StatusErrorType(status):
		return retryable(status)
	}
	return true
}
