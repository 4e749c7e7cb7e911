package routing

import (
	"context"
	"errors"
	"math"
	"net/http"
	"testing"
	"time"

	"github.com/caddy-air/caddy-air/internal/fakeclock"
	"github.com/caddy-air/caddy-air/providers"
)

// fixture is a router over providers a and b (one base URL each, keys as
// given) serving model "m" from both, on a fake clock.
type fixture struct {
	r     *Router
	clock *fakeclock.Clock
	route *providers.Route
	slept []time.Duration
	// timers are the try timeouts armed, in order (see fakeTimer).
	timers []*fakeTimer
}

func newFixture(t *testing.T, policy string, weights [2]int, opts Options, fallback bool) *fixture {
	t.Helper()
	a := &providers.Provider{Name: "a", Protocol: providers.ProtocolOpenAI, BaseURLs: []string{"http://a"}, APIKeys: []string{"ka0", "ka1"}, Retries: 2}
	b := &providers.Provider{Name: "b", Protocol: providers.ProtocolOpenAI, BaseURLs: []string{"http://b"}, APIKeys: []string{"kb"}, Retries: 2}
	c := &providers.Provider{Name: "c", Protocol: providers.ProtocolOpenAI, BaseURLs: []string{"http://c"}}
	m := &providers.Route{Pattern: "m", Policy: policy, Deployments: []*providers.Deployment{
		{Provider: a, UpstreamModel: "ma", Weight: weights[0]},
		{Provider: b, UpstreamModel: "mb", Weight: weights[1]},
	}}
	routes := []*providers.Route{m, {Pattern: "f", Provider: c}}
	if fallback {
		m.Fallbacks = []string{"f"}
	}
	tbl, err := providers.NewTable([]*providers.Provider{a, b, c}, routes)
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{clock: fakeclock.New(time.Unix(1_700_000_000, 0)), route: m}
	f.r = New(Config{Table: tbl, Options: map[string]Options{"a": opts, "b": opts, "c": opts}, Now: f.clock.Now,
		Sleep: func(_ <-chan struct{}, d time.Duration) bool {
			f.slept = append(f.slept, d)
			f.clock.Advance(d)
			return true
		}, AfterFunc: f.afterFunc})
	return f
}

// next returns the plan's next target or fails the test.
func next(t *testing.T, p *Plan) *Target {
	t.Helper()
	tg, err := p.Next(context.Background())
	if err != nil {
		t.Fatalf("Next: %v", err)
	}
	return tg
}

func TestPolicyDistribution(t *testing.T) {
	const picks = 10000
	for _, tc := range []struct {
		policy  string
		weights [2]int
		wantA   float64 // expected share of deployment a
		tol     float64
	}{
		{"", [2]int{3, 1}, 0.75, 0.02},
		{providers.PolicyWeightedRandom, [2]int{1, 1}, 0.5, 0.02},
		{providers.PolicyRoundRobin, [2]int{3, 1}, 0.5, 0.0001},
		{providers.PolicyLeastRequests, [2]int{1, 1}, 0.5, 0.02},
		{providers.PolicyLowestLatency, [2]int{1, 1}, 0.5, 0.02},
	} {
		t.Run(tc.policy, func(t *testing.T) {
			f := newFixture(t, tc.policy, tc.weights, Options{}, false)
			keys := map[string]int{}
			nA := 0
			for range picks {
				tg := next(t, f.r.Plan(Request{Route: f.route}))
				if tg.Provider.Name == "a" {
					nA++
					keys[tg.Attempt.APIKey]++
				}
				tg.Done(Outcome{Status: 200})
			}
			if got := float64(nA) / picks; math.Abs(got-tc.wantA) > tc.tol {
				t.Errorf("deployment a got %.3f of the picks, want %.3f ± %.3f", got, tc.wantA, tc.tol)
			}
			if d := keys["ka0"] - keys["ka1"]; d < -1 || d > 1 {
				t.Errorf("keys of a not balanced: %v", keys)
			}
		})
	}
}

func TestLeastRequestsAvoidsBusyDeployment(t *testing.T) {
	f := newFixture(t, providers.PolicyLeastRequests, [2]int{1, 1}, Options{}, false)
	busy := next(t, f.r.Plan(Request{Route: f.route})) // held in flight
	for range 100 {
		tg := next(t, f.r.Plan(Request{Route: f.route}))
		if tg.Provider == busy.Provider {
			t.Fatalf("least_requests picked %s, which has a request in flight, over an idle one", tg.Provider.Name)
		}
		tg.Done(Outcome{Status: 200})
	}
}

func TestLowestLatencyPrefersFasterDeployment(t *testing.T) {
	f := newFixture(t, providers.PolicyLowestLatency, [2]int{1, 1}, Options{}, false)
	for range 10 {
		tg := next(t, f.r.Plan(Request{Route: f.route}))
		ttfb := 50 * time.Millisecond
		if tg.Provider.Name == "b" {
			ttfb = 900 * time.Millisecond
		}
		tg.Done(Outcome{Status: 200, TTFB: ttfb})
	}
	nA := 0
	for range 1000 {
		tg := next(t, f.r.Plan(Request{Route: f.route}))
		if tg.Provider.Name == "a" {
			nA++
		}
		tg.Done(Outcome{Status: 200, TTFB: 50 * time.Millisecond})
	}
	if nA != 1000 {
		t.Errorf("lowest_latency sent %d of 1000 requests to the faster deployment, want all", nA)
	}
}

// upstreamOf returns the upstream of provider name with key index key.
func upstreamOf(f *fixture, name string, key int) *Upstream {
	for _, u := range f.r.all {
		if u.Provider == name && u.Key == key {
			return u
		}
	}
	return nil
}

func TestBreakerStateMachine(t *testing.T) {
	opts := Options{FailureRate: 0.5, MinRequests: 4, FailWindow: time.Minute, FailDuration: 30 * time.Second}
	f := newFixture(t, "", [2]int{1, 1}, opts, false)
	u := upstreamOf(f, "b", 0)
	attempt := func(o Outcome) {
		t.Helper()
		if !f.r.acquire(u, f.clock.Now(), 0) {
			t.Fatalf("upstream refused an attempt in state %s", u.st.state)
		}
		tg := &Target{Upstream: u, r: f.r}
		tg.Done(o)
	}
	steps := []struct {
		name      string
		do        func()
		wantState State
		wantAvail bool
	}{
		{"one success", func() { attempt(Outcome{Status: 200}) }, Closed, true},
		{"two failures: 2 of 3, below min requests", func() { attempt(Outcome{Status: 502}); attempt(Outcome{Err: errors.New("refused")}) }, Closed, true},
		{"client-fault 400 counts as success", func() { attempt(Outcome{Status: 400}) }, Closed, true},
		{"third failure: 3 of 5 crosses 50%", func() { attempt(Outcome{Timeout: true}) }, Open, false},
		{"still open before fail_duration", func() { f.clock.Advance(29 * time.Second) }, Open, false},
		{"due for a probe after fail_duration", func() { f.clock.Advance(time.Second) }, Open, true},
		{"probe fails: open again", func() { attempt(Outcome{Status: 500}) }, Open, false},
		{"probe due again", func() { f.clock.Advance(30 * time.Second) }, Open, true},
		{"probe succeeds: closed, window reset", func() { attempt(Outcome{Status: 200}) }, Closed, true},
		{"one failure after closing does not reopen", func() { attempt(Outcome{Status: 500}) }, Closed, true},
	}
	for _, s := range steps {
		s.do()
		ok, _ := u.available(f.clock.Now())
		if u.st.state != s.wantState || ok != s.wantAvail {
			t.Fatalf("%s: state %s available %v, want %s %v", s.name, u.st.state, ok, s.wantState, s.wantAvail)
		}
	}
}

func TestHalfOpenLetsOneProbeThrough(t *testing.T) {
	f := newFixture(t, "", [2]int{1, 1}, Options{MinRequests: 1, FailDuration: 10 * time.Second}, false)
	u := upstreamOf(f, "b", 0)
	f.r.acquire(u, f.clock.Now(), 0)
	(&Target{Upstream: u, r: f.r}).Done(Outcome{Status: 503})
	f.clock.Advance(10 * time.Second)
	if !f.r.acquire(u, f.clock.Now(), 0) {
		t.Fatal("the probe was refused")
	}
	if u.st.state != HalfOpen {
		t.Fatalf("state %s during the probe, want half_open", u.st.state)
	}
	if f.r.acquire(u, f.clock.Now(), 0) {
		t.Fatal("a second request went through while the probe is in flight")
	}
}

func TestCooldownFromRetryAfter(t *testing.T) {
	for _, tc := range []struct {
		name       string
		retryAfter time.Duration
		want       time.Duration
	}{
		{"Retry-After", 7 * time.Second, 7 * time.Second},
		{"default", 0, 3 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, "", [2]int{1, 1}, Options{Cooldown: 3 * time.Second}, false)
			u := upstreamOf(f, "b", 0)
			f.r.acquire(u, f.clock.Now(), 0)
			(&Target{Upstream: u, r: f.r}).Done(Outcome{Status: 429, RetryAfter: tc.retryAfter})
			f.clock.Advance(tc.want - time.Millisecond)
			if ok, reason := u.available(f.clock.Now()); ok || reason != "cooldown" {
				t.Fatalf("just before the cooldown ends: available %v (%s)", ok, reason)
			}
			if u.st.state != Closed {
				t.Errorf("a 429 changed the breaker to %s", u.st.state)
			}
			f.clock.Advance(time.Millisecond)
			if ok, _ := u.available(f.clock.Now()); !ok {
				t.Fatal("still out of rotation after the cooldown")
			}
		})
	}
}

func TestRejectedKeyLeavesRotation(t *testing.T) {
	f := newFixture(t, "", [2]int{1, 0}, Options{KeyCooldown: time.Hour}, false)
	f.route.Deployments = f.route.Deployments[:1]
	u := upstreamOf(f, "a", 0)
	f.r.acquire(u, f.clock.Now(), 0)
	(&Target{Upstream: u, r: f.r}).Done(Outcome{Status: http.StatusUnauthorized})
	for range 20 {
		tg := next(t, f.r.Plan(Request{Route: f.route}))
		if tg.Attempt.APIKey == "ka0" {
			t.Fatal("a rejected key was picked")
		}
		tg.Done(Outcome{Status: 200})
	}
}

// A 403 refuses one request, not the key: the key stays in rotation, the
// breaker does not count it, and the request is not retried.
func TestForbiddenKeepsTheKey(t *testing.T) {
	f := newFixture(t, "", [2]int{1, 0}, Options{KeyCooldown: time.Hour, MinRequests: 1, FailureRate: 0.5}, false)
	f.route.Deployments = f.route.Deployments[:1]
	u := upstreamOf(f, "a", 0)
	for range 3 {
		f.r.acquire(u, f.clock.Now(), 0)
		(&Target{Upstream: u, r: f.r}).Done(Outcome{Status: http.StatusForbidden})
	}
	if ok, reason := u.available(f.clock.Now()); !ok {
		t.Fatalf("after three 403s the upstream is out of rotation: %s", reason)
	}
	if Retryable(http.StatusForbidden) {
		t.Error("a 403 is retried on the provider's other keys")
	}
	for _, s := range []int{http.StatusUnauthorized, http.StatusPaymentRequired} {
		if !Retryable(s) || !KeyRejected(s) {
			t.Errorf("%d: retryable %v, key rejected %v; want both", s, Retryable(s), KeyRejected(s))
		}
	}
}

func TestPlanRetriesFallsBackAndGivesUp(t *testing.T) {
	f := newFixture(t, providers.PolicyRoundRobin, [2]int{1, 1}, Options{}, true)
	p := f.r.Plan(Request{Route: f.route})
	var got []string
	for {
		tg, err := p.Next(context.Background())
		if err != nil {
			var u *Unavailable
			if !errors.As(err, &u) || u.RetryAfterSeconds() < 1 {
				t.Fatalf("Next: %v, want *Unavailable with a Retry-After", err)
			}
			break
		}
		got = append(got, tg.Deployment())
		if tg.Fallback && tg.UpstreamModel != "f" {
			t.Errorf("fallback target sends model %q, want f", tg.UpstreamModel)
		}
		tg.Done(Outcome{Status: 500})
	}
	// Model m: three attempts (retries 2) over three upstreams, then the
	// fallback's one upstream, retried with backoff (retries 0 → 1).
	if len(got) != 4 || got[3] != "c" {
		t.Fatalf("attempts went to %v, want 3 on m's deployments then c", got)
	}
	seen := map[string]bool{}
	for _, d := range got[:3] {
		seen[d] = true
	}
	if !seen["a/ma"] || !seen["b/mb"] {
		t.Errorf("retries did not move to the other deployment: %v", got)
	}
}

func TestRetryOnSameUpstreamBacksOff(t *testing.T) {
	f := newFixture(t, "", [2]int{1, 1}, Options{}, false)
	f.route.Deployments = f.route.Deployments[1:] // b: one upstream
	f.r = New(Config{Table: f.r.table, Now: f.clock.Now,
		Sleep: func(_ <-chan struct{}, d time.Duration) bool {
			f.slept = append(f.slept, d)
			f.clock.Advance(d)
			return true
		}})
	p := f.r.Plan(Request{Route: f.route})
	for range 3 {
		next(t, p).Done(Outcome{Status: 502})
	}
	if len(f.slept) != 2 {
		t.Fatalf("slept %v between 3 attempts on one upstream, want 2 backoffs", f.slept)
	}
	for _, d := range f.slept {
		if d < backoffInitial/2 || d > backoffMax*3/2 {
			t.Errorf("backoff %s outside the jittered range", d)
		}
	}
}

func TestWaitsForShortRetryAfter(t *testing.T) {
	f := newFixture(t, "", [2]int{1, 1}, Options{}, false)
	f.route.Deployments = f.route.Deployments[1:]
	f.r = New(Config{Table: f.r.table, Now: f.clock.Now, MaxWait: 2 * time.Second,
		Sleep: func(_ <-chan struct{}, d time.Duration) bool {
			f.slept = append(f.slept, d)
			f.clock.Advance(d)
			return true
		}})
	p := f.r.Plan(Request{Route: f.route})
	next(t, p).Done(Outcome{Status: 429, RetryAfter: time.Second})
	tg := next(t, p)
	if len(f.slept) != 1 || f.slept[0] != time.Second {
		t.Fatalf("slept %v before retrying a 429 with Retry-After: 1, want [1s]", f.slept)
	}
	// A second short cooldown is waited for too, within MaxWait in all.
	tg.Done(Outcome{Status: 429, RetryAfter: time.Second})
	tg = next(t, p)
	if len(f.slept) != 2 || f.slept[1] != time.Second {
		t.Fatalf("slept %v before retrying a second 429 with Retry-After: 1, want [1s 1s]", f.slept)
	}
	// A third 429 ends the plan: its three attempts (retries 2) are used,
	// and another wait would pass MaxWait (2 s in all).
	tg.Done(Outcome{Status: 429, RetryAfter: time.Second})
	_, err := p.Next(context.Background())
	var u *Unavailable
	if !errors.As(err, &u) || u.RetryAfterSeconds() != 1 || len(f.slept) != 2 {
		t.Fatalf("after a third 429 with Retry-After: 1: %v, slept %v, want Unavailable after 1s and no third wait", err, f.slept)
	}
	p = f.r.Plan(Request{Route: f.route})
	f.clock.Advance(time.Second)
	next(t, p).Done(Outcome{Status: 429, RetryAfter: 30 * time.Second})
	_, err = p.Next(context.Background())
	if !errors.As(err, &u) || u.RetryAfterSeconds() != 30 {
		t.Fatalf("after a 429 with Retry-After: 30: %v, want Unavailable after 30s", err)
	}
}

// TestNoWaitForOpenBreaker: a request waits for a short cooldown, never
// for a failing upstream's breaker to let a probe through; it gets
// Unavailable at once, with the breaker's end as Retry-After.
func TestNoWaitForOpenBreaker(t *testing.T) {
	f := newFixture(t, "", [2]int{1, 1}, Options{MinRequests: 1, FailureRate: 0.5, FailDuration: time.Second}, false)
	f.route.Deployments = f.route.Deployments[1:]
	f.r = New(Config{Table: f.r.table, Options: map[string]Options{"b": {MinRequests: 1, FailureRate: 0.5, FailDuration: time.Second}},
		Now: f.clock.Now, MaxWait: 2 * time.Second,
		Sleep: func(_ <-chan struct{}, d time.Duration) bool {
			f.slept = append(f.slept, d)
			f.clock.Advance(d)
			return true
		}})
	next(t, f.r.Plan(Request{Route: f.route})).Done(Outcome{Status: 500})
	_, err := f.r.Plan(Request{Route: f.route}).Next(context.Background())
	var u *Unavailable
	if !errors.As(err, &u) || u.RetryAfterSeconds() != 1 {
		t.Fatalf("with the only breaker open for 1s: %v, want Unavailable after 1s", err)
	}
	if len(f.slept) != 0 {
		t.Fatalf("slept %v waiting for an open breaker, want no wait", f.slept)
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		in   string
		want time.Duration
	}{
		{"", 0}, {"3", 3 * time.Second}, {"0.5", 500 * time.Millisecond}, {"junk", 0}, {"-4", 0},
		{now.Add(9 * time.Second).Format(http.TimeFormat), 9 * time.Second}, {"999999", time.Hour},
		{"999999999", time.Hour}, {"999999999999", time.Hour}, {"1e300", time.Hour}, {"NaN", 0}, {"Inf", 0}, {"-Inf", 0},
		{now.Add(-time.Minute).Format(http.TimeFormat), 0}, {now.AddDate(31, 0, 0).Format(http.TimeFormat), time.Hour},
		{"Fri, 31 Dec 9999 23:59:59 GMT", time.Hour},
	} {
		if got := ParseRetryAfter(tc.in, now); got != tc.want {
			t.Errorf("ParseRetryAfter(%q) = %s, want %s", tc.in, got, tc.want)
		}
	}
}
