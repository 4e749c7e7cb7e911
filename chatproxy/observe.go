package chatproxy

import (
	"github.com/caddy-air/caddy-air/dialect"
	"github.com/caddy-air/caddy-air/routing"
	"github.com/caddy-air/caddy-air/telemetry"
	"github.com/caddy-air/caddy-air/upstream"
)

// Each upstream attempt gets a span (see package telemetry) when the
// request's span records, and its result is counted in the provider's
// health (Proxy.Health), both by the attempt runner (package upstream).
// With tracing off, the span is the request's non-recording one, and no
// response metadata is collected.

// Error types of attempts that got no usable answer; one with an error
// status has the status as its type.
const (
	errTypeUnavailable = "unavailable"
	errTypeTimeout     = "timeout"
	errTypeCanceled    = "canceled"
	errTypeCut         = "upstream_cut"
	errTypeStreamError = "upstream_error"
)

// operation names c's endpoint in spans and logs: c.Operation, or its
// Wire's.
func (c *Call) operation() string {
	if c.Operation != "" {
		return c.Operation
	}
	return c.Wire.Operation()
}

// failedEnd is the end of an attempt that got no usable answer: result
// is its metric result, status its error status (0 when none arrived),
// errType and err its span's error. A cancelled one does not count
// against the provider; retry moves on to the next attempt.
func failedEnd(result string, status int, errType string, err error, o routing.Outcome, retry bool) upstream.End {
	return upstream.End{Result: result, Status: status, Err: err, Outcome: o, Retry: retry,
		Span:  telemetry.Result{Status: status, ErrorType: errType, Err: err},
		Fault: errType != errTypeCanceled, Uncounted: errType == errTypeCanceled}
}

// deliveredEnd is the end of the attempt whose answer, res, went to the
// client, with what its result and metadata say of it; o is what the
// router learns of its headers. The span's end is filled only when
// recording.
func deliveredEnd(res *Result, meta *dialect.Meta, o routing.Outcome, recording bool) upstream.End {
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
	result := routing.StatusResult(o.Status)
	switch {
	case errType == errTypeCanceled:
		o.Canceled = true
	case errType == errTypeTimeout:
		o.Timeout = true
	case errType == errTypeStreamError || errType == errTypeCut:
		o.Broken = true
	}
	e := upstream.End{Result: result, Status: res.Status, Err: res.Err, Outcome: o, Delivered: true,
		Uncounted: errType == errTypeCanceled, Fault: providerFault(res.Status, errType)}
	if !recording {
		return e
	}
	e.Span = telemetry.Result{Status: res.Status, Outcome: res.Outcome, ErrorType: errType, Err: res.Err}
	if res.Status >= 200 && res.Status < 300 {
		u := res.Usage
		e.Span.HasTokens = true
		e.Span.Tokens = telemetry.Tokens{Input: u.PromptTotal(), Output: u.Output,
			CacheRead: u.CacheRead, CacheCreation: u.CacheCreation, Reasoning: u.Reasoning}
	}
	if meta != nil {
		e.Span.ResponseModel, e.Span.FinishReasons = meta.Model, meta.Finish
	}
	return e
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
