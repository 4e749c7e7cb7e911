package routing

import (
	"context"
	"errors"
	"time"
)

// ErrTryTimeout is the cause of an attempt's context cancelled because
// no response headers came within its provider's try timeout
// (Options.TryTimeout). Such an attempt counts as a timeout, and the
// request moves on to its next attempt.
var ErrTryTimeout = errors.New("no response headers within the provider's try_timeout")

// TryTimeout is how long the attempt may wait for its response headers
// before it is abandoned for the next attempt: its provider's
// Options.TryTimeout. It is 0, no bound, when the provider sets none, for
// a pinned attempt (no other upstream could serve it) and for a
// NonIdempotent request (the upstream may act on it before it answers).
func (t *Target) TryTimeout() time.Duration { return t.try }

// Try bounds the attempt's wait for its response headers by its
// TryTimeout. It returns a context under ctx for the attempt's request,
// cancelled with cause ErrTryTimeout (which closes the request's
// connection) when the bound passes first, and headers, to call as soon
// as the response headers arrived or the attempt failed otherwise:
// headers stops the bound and reports whether it had not passed. When it
// reports false the attempt timed out, even if an answer came meanwhile:
// drop the answer, end the attempt with Outcome.Timeout, and ask the plan
// for the next one. The context lives until Done. Without a bound, Try
// returns ctx and a headers that always reports true.
func (t *Target) Try(ctx context.Context) (context.Context, func() bool) {
	if t.try <= 0 {
		return ctx, func() bool { return true }
	}
	ctx, cancel := context.WithCancelCause(ctx)
	t.cancel = func() { cancel(nil) }
	stop := t.r.after(t.try, func() { cancel(ErrTryTimeout) })
	return ctx, stop
}

// TimedOut reports whether err, or the cause of ctx, says the attempt's
// try timeout passed.
func TimedOut(ctx context.Context, err error) bool {
	return errors.Is(err, ErrTryTimeout) || errors.Is(context.Cause(ctx), ErrTryTimeout)
}

// afterFunc is time.AfterFunc, returning its timer's Stop.
func afterFunc(d time.Duration, f func()) func() bool { return time.AfterFunc(d, f).Stop }
