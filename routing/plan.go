package routing

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/cenkalti/backoff/v5"

	"github.com/caddy-air/caddy-air/providers"
)

// Request is one client request to route.
type Request struct {
	// Route is the model's route.
	Route *providers.Route
	// Tokens is the request's estimated tokens, counted against TPM
	// limits.
	Tokens int64
	// Pin, when set, is the only attempt made, outside balancing and
	// fallbacks (a Responses request bound to the deployment that holds
	// its response). Its upstream's breaker still learns from it.
	Pin *Pin
	// NonIdempotent is set for a request the upstream may act on before
	// it answers (a task create: the provider may have taken the job):
	// its attempts have no try timeout (Options.TryTimeout), so none is
	// abandoned for a retry that could run the job twice. A caller does
	// not retry such a request after a timeout either.
	NonIdempotent bool
}

// Pin is a fixed attempt.
type Pin struct {
	// Provider is the provider called.
	Provider *providers.Provider
	// Attempt is the base URL and key called.
	Attempt providers.Attempt
}

// Unavailable is Next's error when no upstream of the model or its
// fallbacks can take the request.
type Unavailable struct {
	// RetryAfter is when an upstream may take requests again, at least a
	// second.
	RetryAfter time.Duration
}

// Error describes the failure.
func (e *Unavailable) Error() string {
	return fmt.Sprintf("no upstream available; retry after %s", e.RetryAfter)
}

// RetryAfterSeconds is RetryAfter in whole seconds, rounded up.
func (e *Unavailable) RetryAfterSeconds() int { return int(math.Ceil(e.RetryAfter.Seconds())) }

// Plan is the attempts of one request. It is not safe for concurrent use.
type Plan struct {
	r       *Router
	req     Request
	chain   []*group
	used    []int
	gi      int
	tried   []*Upstream
	n       int
	bo      *backoff.ExponentialBackOff
	waited  time.Duration // waited for cooling upstreams so far; at most the router's MaxWait
	fellTo  int           // last group index reported as a fallback
	pinDone bool
}

// Plan starts the attempts of req.
func (r *Router) Plan(req Request) *Plan {
	p := &Plan{r: r, req: req}
	if req.Pin != nil {
		return p
	}
	if g := r.groups[req.Route]; g != nil {
		p.chain = append(p.chain, g)
		for _, f := range req.Route.Fallbacks {
			if fr := r.byName[f]; fr != nil {
				p.chain = append(p.chain, r.groups[fr])
			}
		}
	}
	p.used = make([]int, len(p.chain))
	return p
}

// Backoff between two attempts on the same upstream.
const (
	backoffInitial = 100 * time.Millisecond
	backoffMax     = 2 * time.Second
)

// Next returns the next attempt's target, waiting first when it goes to
// an upstream the request already tried (jittered exponential backoff)
// or when every upstream is cooling down for less than the router's
// MaxWait. It returns ctx's error when the client left, and *Unavailable
// when no attempt remains.
func (p *Plan) Next(ctx context.Context) (*Target, error) {
	if p.req.Pin != nil {
		return p.nextPinned()
	}
	backedOff := false
	for guard := 0; guard < 64; guard++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		now := p.r.now()
		for p.gi < len(p.chain) {
			g := p.chain[p.gi]
			u := p.pick(g, now)
			if u == nil || p.used[p.gi] >= g.budget {
				p.gi++
				continue
			}
			if p.triedBefore(u) && !backedOff {
				if !p.wait(ctx, p.backoff().NextBackOff()) {
					return nil, ctx.Err()
				}
				backedOff = true
				now = p.r.now()
				continue
			}
			if !p.r.acquire(u, now, p.req.Tokens) {
				continue
			}
			return p.target(g, u, now), nil
		}
		at := p.readyAt(now, true, false)
		if !at.IsZero() && p.waited+at.Sub(now) <= p.r.maxWait && p.r.maxWait > 0 && fits(ctx, at) {
			p.waited += at.Sub(now)
			if !p.wait(ctx, at.Sub(now)) {
				return nil, ctx.Err()
			}
			p.gi, backedOff = 0, true
			continue
		}
		break
	}
	return nil, p.unavailable()
}

// nextPinned returns the pinned attempt once.
func (p *Plan) nextPinned() (*Target, error) {
	if p.pinDone {
		return nil, &Unavailable{RetryAfter: time.Second}
	}
	p.pinDone = true
	pin := p.req.Pin
	t := &Target{Route: p.req.Route, Provider: pin.Provider, Attempt: pin.Attempt, Number: 1, r: p.r, start: p.r.now()}
	if p.req.Route != nil {
		t.UpstreamModel = p.req.Route.UpstreamModel
	}
	now := p.r.now()
	for _, u := range p.r.all {
		if u.Provider == pin.Provider.Name && u.BaseURL == pin.Attempt.BaseURL && u.apiKey == pin.Attempt.APIKey {
			if p.r.acquireForce(u, now, p.req.Tokens) {
				t.Upstream = u
			}
			break
		}
	}
	return t, nil
}

// fits reports whether at is before ctx's deadline, if it has one.
func fits(ctx context.Context, at time.Time) bool {
	d, ok := ctx.Deadline()
	return !ok || at.Before(d)
}

// wait sleeps d, or until ctx is done; false means ctx is done.
func (p *Plan) wait(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	return p.r.sleep(ctx.Done(), d) && ctx.Err() == nil
}

// backoff returns the plan's backoff, made on first use.
func (p *Plan) backoff() *backoff.ExponentialBackOff {
	if p.bo == nil {
		p.bo = &backoff.ExponentialBackOff{InitialInterval: backoffInitial, RandomizationFactor: 0.5,
			Multiplier: 2, MaxInterval: backoffMax}
		p.bo.Reset()
	}
	return p.bo
}

// target records the attempt on u of group g and returns its target.
func (p *Plan) target(g *group, u *Upstream, now time.Time) *Target {
	p.used[p.gi]++
	p.n++
	p.tried = append(p.tried, u)
	t := &Target{Route: g.route, Provider: u.dep.d.Provider, UpstreamModel: u.dep.d.UpstreamModel,
		Attempt: providers.Attempt{BaseURL: u.BaseURL, APIKey: u.apiKey}, Upstream: u, Number: p.n,
		Fallback: p.gi > 0, r: p.r, start: now}
	if !p.req.NonIdempotent {
		t.try = u.prov.opts.TryTimeout
	}
	if t.Fallback && t.UpstreamModel == "" {
		t.UpstreamModel = g.route.Pattern
	}
	if t.Fallback && p.fellTo != p.gi {
		p.fellTo = p.gi
		if p.r.obs != nil {
			p.r.obs.Fallback(p.chain[0].route.Pattern, g.route.Pattern)
		}
		p.r.log.Debug("falling back")
	}
	return t
}

// triedBefore reports whether the request already made an attempt on u.
func (p *Plan) triedBefore(u *Upstream) bool {
	for _, t := range p.tried {
		if t == u {
			return true
		}
	}
	return false
}

// pick chooses an available upstream of g: among the deployments that
// have one the request has not tried, or else any available one, the
// policy picks a deployment, then its upstreams are taken in turn.
func (p *Plan) pick(g *group, now time.Time) *Upstream {
	var fresh, any [8]*deployment
	cands, seen := fresh[:0], any[:0]
	for _, d := range g.deps {
		f, a := p.availableIn(d, now)
		if f != nil {
			cands = append(cands, d)
		}
		if a != nil {
			seen = append(seen, d)
		}
	}
	untried := len(cands) > 0
	if !untried {
		cands = seen
	}
	if len(cands) == 0 {
		return nil
	}
	d := g.policy(g, cands)
	n := len(d.upstreams)
	start := int(d.next.Add(1) - 1)
	for i := range n {
		u := d.upstreams[(start+i)%n]
		if ok, _ := u.available(now); ok && (!untried || !p.triedBefore(u)) {
			return u
		}
	}
	return nil
}

// availableIn returns an available upstream of d the request has not
// tried, and one it may have tried; nil when there is none.
func (p *Plan) availableIn(d *deployment, now time.Time) (fresh, any *Upstream) {
	for _, u := range d.upstreams {
		if ok, _ := u.available(now); !ok {
			continue
		}
		if any == nil {
			any = u
		}
		if !p.triedBefore(u) {
			return u, any
		}
	}
	return nil, any
}

// readyAt is the earliest time an upstream of the chain, now waiting on
// a cooldown, breaker or key, may take requests; with budget set, only
// groups with attempts left count; without breakers, an open breaker is
// no wait worth making (a request waits for a 429's cooldown, never for a
// failing upstream's probe). Zero when none waits on the clock.
func (p *Plan) readyAt(now time.Time, budget, breakers bool) time.Time {
	var at time.Time
	for i, g := range p.chain {
		if budget && p.used[i] >= g.budget {
			continue
		}
		for _, d := range g.deps {
			for _, u := range d.upstreams {
				if t := u.readyAt(now, breakers); !t.IsZero() && (at.IsZero() || t.Before(at)) {
					at = t
				}
			}
		}
	}
	return at
}

// unavailable is the error of a plan with no attempt left.
func (p *Plan) unavailable() *Unavailable {
	now := p.r.now()
	d := time.Second
	if at := p.readyAt(now, false, true); !at.IsZero() {
		d = max(at.Sub(now), d)
	}
	return &Unavailable{RetryAfter: d}
}

// Attempts is how many attempts the plan handed out.
func (p *Plan) Attempts() int {
	if p.req.Pin != nil && p.pinDone {
		return 1
	}
	return p.n
}
