package routing

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/caddy-air/caddy-air/providers"
)

// fakeTimer is a timer of the fixture's fake clock: it fires only when
// the test calls fire.
type fakeTimer struct {
	f     *fixture
	d     time.Duration
	fn    func()
	mu    sync.Mutex
	done  bool // fired or stopped
	fired bool
}

// afterFunc arms a fake timer (Config.AfterFunc).
func (f *fixture) afterFunc(d time.Duration, fn func()) func() bool {
	ft := &fakeTimer{f: f, d: d, fn: fn}
	f.timers = append(f.timers, ft)
	return ft.stop
}

// stop stops the timer; false when it fired or was stopped already.
func (ft *fakeTimer) stop() bool {
	ft.mu.Lock()
	defer ft.mu.Unlock()
	if ft.done {
		return false
	}
	ft.done = true
	return true
}

// fire moves the clock to the timer's end and runs its function, unless
// it was stopped.
func (ft *fakeTimer) fire() {
	ft.mu.Lock()
	if ft.done {
		ft.mu.Unlock()
		return
	}
	ft.done, ft.fired = true, true
	ft.mu.Unlock()
	ft.f.clock.Advance(ft.d)
	ft.fn()
}

// TestTryTimeout: an attempt bounded by its provider's try timeout is
// abandoned when no headers came in time (its context cancelled with
// ErrTryTimeout), counts as a failure of its upstream, and the plan's
// next attempt goes at once to the other deployment; with no try timeout,
// and for a task create (NonIdempotent) or a pinned attempt, nothing
// bounds the attempt.
func TestTryTimeout(t *testing.T) {
	const try = 300 * time.Millisecond
	for _, tc := range []struct {
		name    string
		opts    Options
		req     func(*fixture) Request
		headers bool          // the response headers came before the bound
		want    time.Duration // the attempt's bound
	}{
		{"unset: no bound", Options{}, nil, false, 0},
		{"exceeded: abandoned, next upstream serves", Options{TryTimeout: try}, nil, false, try},
		{"headers in time", Options{TryTimeout: try}, nil, true, try},
		{"task create: no bound", Options{TryTimeout: try}, func(f *fixture) Request {
			return Request{Route: f.route, NonIdempotent: true}
		}, false, 0},
		{"pinned: no bound", Options{TryTimeout: try}, func(f *fixture) Request {
			u := upstreamOf(f, "b", 0)
			return Request{Route: f.route, Pin: &Pin{Provider: u.dep.d.Provider, Attempt: providers.Attempt{BaseURL: u.BaseURL, APIKey: u.apiKey}}}
		}, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, "", [2]int{1, 1}, tc.opts, false)
			req := Request{Route: f.route}
			if tc.req != nil {
				req = tc.req(f)
			}
			p := f.r.Plan(req)
			first := next(t, p)
			if got := first.TryTimeout(); got != tc.want {
				t.Fatalf("TryTimeout %s, want %s", got, tc.want)
			}
			parent := context.Background()
			ctx, headers := first.Try(parent)
			if tc.want == 0 {
				if ctx != parent || len(f.timers) != 0 || !headers() {
					t.Fatalf("an attempt without a try timeout got a bound: %d timers", len(f.timers))
				}
				first.Done(Outcome{Status: 200})
				return
			}
			if len(f.timers) != 1 || f.timers[0].d != try {
				t.Fatalf("timers %v, want one of %s", f.timers, try)
			}
			if tc.headers {
				if !headers() {
					t.Fatal("headers in time reported a timeout")
				}
				f.timers[0].fire()
				first.Done(Outcome{Status: 200})
				if err := context.Cause(ctx); err != context.Canceled {
					t.Fatalf("attempt context after Done: cause %v, want only canceled (never a try timeout)", err)
				}
				return
			}
			f.timers[0].fire()
			if !errors.Is(context.Cause(ctx), ErrTryTimeout) || !TimedOut(ctx, ctx.Err()) {
				t.Fatalf("attempt context after the bound: %v (cause %v), want cancelled by ErrTryTimeout", ctx.Err(), context.Cause(ctx))
			}
			if headers() {
				t.Fatal("headers after the bound reported in time")
			}
			first.Done(Outcome{Timeout: true})
			if st := first.Upstream.prov.tracker.Stats(first.Upstream.id); st.Failures != 1 {
				t.Errorf("the abandoned upstream counts %d failures, want 1", st.Failures)
			}
			second := next(t, p)
			if second.Upstream == first.Upstream || len(f.slept) != 0 {
				t.Fatalf("after a try timeout on %s the next attempt went to %s after sleeping %v, want another upstream at once",
					first.Upstream.ID(), second.Upstream.ID(), f.slept)
			}
			second.Done(Outcome{Status: 200})
		})
	}
}
