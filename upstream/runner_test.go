package upstream

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/caddy-air/caddy-air/health"
	"github.com/caddy-air/caddy-air/internal/fakeclock"
	"github.com/caddy-air/caddy-air/providers"
	"github.com/caddy-air/caddy-air/routing"
)

// observed records what an Observer is told, one "provider result
// retried" string per attempt.
type observed []string

func (o *observed) Attempt(provider, result string, retried bool) {
	*o = append(*o, fmt.Sprintf("%s %s %v", provider, result, retried))
}

// script is an Attempter whose attempts end as its steps say, in order.
type script struct {
	steps    []func(ctx context.Context, t *routing.Target, headers func() bool) End
	prepErr  error
	skip     string   // the provider whose targets Prepare skips
	targets  []string // the providers attempted
	prepared int
}

func (s *script) Prepare(t *routing.Target) error {
	s.prepared++
	if s.skip == t.Provider.Name {
		return ErrSkip
	}
	return s.prepErr
}

func (s *script) Attempt(ctx context.Context, t *routing.Target, headers func() bool) End {
	s.targets = append(s.targets, t.Provider.Name)
	return s.steps[len(s.targets)-1](ctx, t, headers)
}

// status is a step answered with status, retried when routing retries
// it.
func status(code int, retryAfter time.Duration) func(context.Context, *routing.Target, func() bool) End {
	return func(_ context.Context, _ *routing.Target, headers func() bool) End {
		headers()
		e := End{Result: routing.StatusResult(code), Status: code, Outcome: routing.Outcome{Status: code, RetryAfter: retryAfter},
			Fault: code == http.StatusTooManyRequests || code >= 500, Retry: routing.Retryable(code), Delivered: !routing.Retryable(code)}
		if e.Retry {
			e.Err = fmt.Errorf("upstream answered %d", code)
		}
		return e
	}
}

// router is a router of model "m" on provider a, falling back to model
// "f" on provider b (one key each, no retries on the same upstream), with
// opts for both, on clock.
func router(t *testing.T, clock *fakeclock.Clock, opts routing.Options) (*routing.Router, *providers.Route) {
	t.Helper()
	a := &providers.Provider{Name: "a", Protocol: providers.ProtocolOpenAI, BaseURLs: []string{"http://a"}, APIKeys: []string{"ka"}}
	b := &providers.Provider{Name: "b", Protocol: providers.ProtocolOpenAI, BaseURLs: []string{"http://b"}, APIKeys: []string{"kb"}}
	m := &providers.Route{Pattern: "m", Provider: a, Fallbacks: []string{"f"}}
	tbl, err := providers.NewTable([]*providers.Provider{a, b}, []*providers.Route{m, {Pattern: "f", Provider: b}})
	if err != nil {
		t.Fatal(err)
	}
	return routing.New(routing.Config{Table: tbl, Options: map[string]routing.Options{"a": opts, "b": opts}, Now: clock.Now,
		Sleep: func(<-chan struct{}, time.Duration) bool { return false }}), m
}

// TestRun: the runner's loop over a plan, its bookkeeping of each
// attempt (metric with its retried flag, health, router, log line, span)
// and its give-up.
func TestRun(t *testing.T) {
	const try = 20 * time.Millisecond
	timedOut := func(ctx context.Context, t *routing.Target, headers func() bool) End {
		<-ctx.Done() // no headers: the try timeout cancels the attempt
		if headers() || !routing.TimedOut(ctx, nil) {
			return End{Result: "not timed out"}
		}
		return End{Result: routing.AttemptTimeout, Err: routing.ErrTryTimeout, Outcome: routing.Outcome{Timeout: true}, Fault: true, Retry: true}
	}
	unbounded := func(ctx context.Context, t *routing.Target, headers func() bool) End {
		if t.TryTimeout() != 0 || ctx.Done() != nil || !headers() {
			return End{Result: "bounded"}
		}
		return status(http.StatusOK, 0)(ctx, t, headers)
	}
	for _, tc := range []struct {
		name         string
		opts         routing.Options
		nonIdem      bool
		cancel       bool // the client leaves during the first attempt
		prepErr      error
		steps        []func(context.Context, *routing.Target, func() bool) End
		wantErr      func(error) bool
		wantTargets  []string
		wantObserved []string
		wantFailures int64 // provider a's health failures
		wantLogs     int
		uncounted    bool   // the attempt to a is not in its health
		skip         string // the provider Prepare passes over
	}{
		{name: "429 then success: the first one's metric marked retried",
			steps:       []func(context.Context, *routing.Target, func() bool) End{status(429, 0), status(200, 0)},
			wantTargets: []string{"a", "b"}, wantObserved: []string{"a status_429 true", "b ok false"}, wantFailures: 1, wantLogs: 2},
		{name: "400: no retry",
			steps:       []func(context.Context, *routing.Target, func() bool) End{status(400, 0)},
			wantTargets: []string{"a"}, wantObserved: []string{"a status_4xx false"}, wantLogs: 1},
		{name: "try timeout: abandoned for the next upstream", opts: routing.Options{TryTimeout: try},
			steps:       []func(context.Context, *routing.Target, func() bool) End{timedOut, status(200, 0)},
			wantTargets: []string{"a", "b"}, wantObserved: []string{"a timeout true", "b ok false"}, wantFailures: 1, wantLogs: 2},
		{name: "non-idempotent: no try timeout", opts: routing.Options{TryTimeout: try}, nonIdem: true,
			steps:       []func(context.Context, *routing.Target, func() bool) End{unbounded},
			wantTargets: []string{"a"}, wantObserved: []string{"a ok false"}, wantLogs: 1},
		{name: "client gone: the plan ends, the last metric not retried", cancel: true,
			steps:       []func(context.Context, *routing.Target, func() bool) End{status(503, 0)},
			wantErr:     func(err error) bool { return errors.Is(err, context.Canceled) },
			wantTargets: []string{"a"}, wantObserved: []string{"a status_5xx false"}, wantFailures: 1, wantLogs: 1},
		{name: "client left mid-answer: not counted against the provider",
			steps: []func(context.Context, *routing.Target, func() bool) End{func(context.Context, *routing.Target, func() bool) End {
				return End{Result: routing.AttemptCanceled, Outcome: routing.Outcome{Canceled: true}, Fault: true, Uncounted: true}
			}},
			wantTargets: []string{"a"}, wantObserved: []string{"a canceled false"}, wantLogs: 1, uncounted: true},
		{name: "every target in cooldown: unavailable with retry-after",
			steps: []func(context.Context, *routing.Target, func() bool) End{status(429, time.Minute), status(429, time.Minute)},
			wantErr: func(err error) bool {
				var un *routing.Unavailable
				return errors.As(err, &un) && un.RetryAfterSeconds() == 60
			},
			wantTargets: []string{"a", "b"}, wantObserved: []string{"a status_429 true", "b status_429 false"}, wantFailures: 1, wantLogs: 2},
		{name: "prepare skips a target: the next one is attempted", skip: "a",
			steps:       []func(context.Context, *routing.Target, func() bool) End{status(200, 0)},
			wantTargets: []string{"b"}, wantObserved: []string{"b ok false"}, wantLogs: 1, uncounted: true},
		{name: "prepare fails: no attempt, nothing counted", prepErr: errors.New("no body"),
			wantErr:     func(err error) bool { return err != nil && err.Error() == "no body" },
			wantTargets: nil, wantObserved: nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := fakeclock.New(time.Unix(1_700_000_000, 0))
			r, route := router(t, clock, tc.opts)
			obs := new(observed)
			tr := health.NewTracker(0)
			core, logs := observer.New(zapcore.DebugLevel)
			sr := tracetest.NewSpanRecorder()
			tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
			defer func() { _ = tp.Shutdown(context.Background()) }()
			ctx, parent := tp.Tracer("test").Start(context.Background(), "handler")
			ctx, cancel := context.WithCancel(ctx)
			defer cancel()
			s := &script{steps: tc.steps, prepErr: tc.prepErr, skip: tc.skip}
			if tc.cancel {
				first := s.steps[0]
				s.steps[0] = func(ctx context.Context, t *routing.Target, h func() bool) End { cancel(); return first(ctx, t, h) }
			}
			if tc.nonIdem {
				ctx = context.Background() // no span: the attempt's context is the request's, unbounded
			}
			run := Runner{Logger: zap.New(core), Health: tr, Observer: obs}
			err := run.Run(ctx, r.Plan(routing.Request{Route: route, NonIdempotent: tc.nonIdem}),
				&Spec{Operation: "chat", Model: "m", RequestID: "req_1", Client: "alice"}, s)
			parent.End()
			switch {
			case tc.wantErr == nil && err != nil:
				t.Fatalf("Run: %v", err)
			case tc.wantErr != nil && !tc.wantErr(err):
				t.Fatalf("Run returned %v", err)
			}
			if !slices.Equal(s.targets, tc.wantTargets) {
				t.Errorf("attempts to %v, want %v", s.targets, tc.wantTargets)
			}
			if !slices.Equal(*obs, tc.wantObserved) {
				t.Errorf("observed %q, want %q", *obs, tc.wantObserved)
			}
			if st := tr.Stats("a"); st.Failures != tc.wantFailures || st.Attempts != int64(min(len(tc.wantTargets), 1)) && !tc.uncounted ||
				tc.uncounted && st.Attempts != 0 {
				t.Errorf("health of a: %+v, want %d failures", st, tc.wantFailures)
			}
			if got := logs.FilterMessage(routing.AttemptLogMessage).Len(); got != tc.wantLogs {
				t.Errorf("%d attempt log lines, want %d", got, tc.wantLogs)
			}
			if !tc.nonIdem {
				if got := len(sr.Ended()) - 1; got != len(tc.wantTargets) { // less the handler's
					t.Errorf("%d attempt spans, want %d", got, len(tc.wantTargets))
				}
			}
		})
	}
}
