// Package routing picks the upstream of every attempt of every endpoint:
// it balances a model's deployments (weighted random, round robin, least
// requests, lowest latency) and a provider's keys, keeps upstreams that
// fail out of rotation (cooldowns on 429, circuit breakers on failure
// rates, keys the provider rejects, failed active health checks, limits),
// paces retries with jittered backoff, bounds each attempt's wait for its
// response headers when a provider sets a try timeout, and falls back to
// other models when none of a model's deployments answers before the
// first byte.
//
// An upstream is one deployment × base URL × key. A request gets a Plan;
// each Next returns the Target of one attempt, whose Done reports how it
// went, and whose LogAttempt writes its log line. Breakers and cooldowns
// may outlive a Router, for the upstreams of a new configuration that are
// unchanged (Config.States). The package does not import Caddy.
package routing

import (
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/caddy-air/caddy-air/health"
	"github.com/caddy-air/caddy-air/providers"
)

// Defaults of Options.
const (
	DefaultFailureRate  = 0.5
	DefaultMinRequests  = 5
	DefaultFailWindow   = time.Minute
	DefaultFailDuration = 30 * time.Second
	DefaultCooldown     = time.Second
	DefaultKeyCooldown  = 10 * time.Minute
	// DefaultMaxWait is the longest a request waits for a cooling upstream
	// when no other is available.
	DefaultMaxWait = 2 * time.Second
)

// Options tune the upstreams of one provider.
type Options struct {
	// FailureRate is the share of failed attempts (5xx, no connection,
	// timeout, cut stream) within FailWindow above which an upstream's
	// breaker opens. Default: DefaultFailureRate.
	FailureRate float64
	// MinRequests is how many attempts within FailWindow an upstream must
	// have made before its failure rate is judged. Default:
	// DefaultMinRequests.
	MinRequests int64
	// FailWindow is the span of the failure rate. Default: DefaultFailWindow.
	FailWindow time.Duration
	// FailDuration is how long an open breaker keeps its upstream out of
	// rotation before one probe request may go. Default:
	// DefaultFailDuration.
	FailDuration time.Duration
	// Cooldown is how long an upstream that answered 429 without
	// Retry-After is out of rotation. Default: DefaultCooldown.
	Cooldown time.Duration
	// KeyCooldown is how long a key the provider rejected (401, 402 or a
	// quota error; see KeyRejected) is out of rotation. Default:
	// DefaultKeyCooldown.
	KeyCooldown time.Duration
	// MaxConcurrent bounds the requests in flight per upstream (base URL ×
	// key); zero is no bound.
	MaxConcurrent int
	// RPM and TPM bound the requests and estimated tokens per minute per
	// upstream; zero is no bound.
	RPM, TPM int
	// HealthCheck, when set, probes each base URL × key at an interval.
	HealthCheck *HealthCheck
	// TryTimeout bounds how long one attempt waits for its response
	// headers: an attempt without them by then is abandoned, counts as a
	// timeout, and the request moves on to its next attempt (see
	// Target.Try). Zero is no bound: an attempt waits for the provider's
	// own timeout, which ends the request.
	TryTimeout time.Duration
}

// withDefaults fills the zero fields of o.
func (o Options) withDefaults() Options {
	if o.FailureRate <= 0 {
		o.FailureRate = DefaultFailureRate
	}
	if o.MinRequests <= 0 {
		o.MinRequests = DefaultMinRequests
	}
	if o.FailWindow <= 0 {
		o.FailWindow = DefaultFailWindow
	}
	if o.FailDuration <= 0 {
		o.FailDuration = DefaultFailDuration
	}
	if o.Cooldown <= 0 {
		o.Cooldown = DefaultCooldown
	}
	if o.KeyCooldown <= 0 {
		o.KeyCooldown = DefaultKeyCooldown
	}
	return o
}

// Observer is told of the routing events worth a metric. Its methods must
// be quick and safe for concurrent use.
type Observer interface {
	// BreakerState reports an upstream's breaker entering state.
	BreakerState(u *Upstream, state State)
	// KeyRejected reports a provider's key taken out of rotation.
	KeyRejected(provider string, key int)
	// Cooldown reports an upstream put in cooldown after a 429.
	Cooldown(u *Upstream)
	// Fallback reports a request moving from model to fallback.
	Fallback(model, fallback string)
}

// Config builds a Router.
type Config struct {
	// Table holds the models and their deployments.
	Table *providers.Table
	// Options are the options of each provider, by name; a provider
	// without any gets the defaults.
	Options map[string]Options
	// MaxWait bounds how long a request waits for a cooling upstream when
	// none is available. Zero means DefaultMaxWait; negative never waits.
	MaxWait time.Duration
	// Observer, if set, is told of breaker changes, rejected keys,
	// cooldowns and fallbacks.
	Observer Observer
	// States, when set, returns the breaker and cooldown state of the
	// upstream with the given Identity. A caller that keeps these states
	// by identity across configurations (as caddymodule does in a
	// caddy.UsagePool) keeps an open breaker open, and a cooling upstream
	// cooling, across a reload that does not change the upstream. Nil
	// gives each upstream a state of its own.
	States func(identity string) *UpstreamState
	// Logger receives breaker and key events; nil disables them.
	Logger *zap.Logger
	// Now and Sleep replace the clock in tests. Sleep waits d or until
	// done is closed, and reports whether it waited d.
	Now   func() time.Time
	Sleep func(done <-chan struct{}, d time.Duration) bool
	// AfterFunc replaces time.AfterFunc in tests: it calls f in its own
	// goroutine once d has passed, unless the stop it returns is called
	// first; stop reports whether it stopped f from being called.
	AfterFunc func(d time.Duration, f func()) (stop func() bool)
}

// Router holds the routing state of one configuration. Its methods are
// safe for concurrent use.
type Router struct {
	table    *providers.Table
	groups   map[*providers.Route]*group
	byName   map[string]*providers.Route
	provs    map[string]*provider
	all      []*Upstream
	deps     map[string]*deployment
	maxWait  time.Duration
	obs      Observer
	log      *zap.Logger
	now      func() time.Time
	sleep    func(<-chan struct{}, time.Duration) bool
	after    func(time.Duration, func()) func() bool
	states   func(string) *UpstreamState
	checksMu sync.Mutex
}

// provider is the state shared by the upstreams of one provider.
type provider struct {
	p       *providers.Provider
	opts    Options
	tracker *health.Tracker
	// keys holds, per key index, until when the key is out of rotation.
	keysMu sync.Mutex
	keys   []time.Time
	// healthy holds the active health of each base URL × key, by
	// healthKey; absent means healthy.
	healthMu sync.RWMutex
	healthy  map[healthKey]bool
}

// healthKey names a base URL × key of a provider.
type healthKey struct {
	base, key int
}

// New builds the routing state of c.Table.
func New(c Config) *Router {
	r := &Router{table: c.Table, groups: make(map[*providers.Route]*group), byName: make(map[string]*providers.Route),
		provs: make(map[string]*provider), deps: make(map[string]*deployment), maxWait: c.MaxWait, obs: c.Observer, log: c.Logger, now: c.Now, sleep: c.Sleep, after: c.AfterFunc, states: c.States}
	if r.maxWait == 0 {
		r.maxWait = DefaultMaxWait
	}
	if r.now == nil {
		r.now = time.Now
	}
	if r.sleep == nil {
		r.sleep = sleep
	}
	if r.after == nil {
		r.after = afterFunc
	}
	if r.log == nil {
		r.log = zap.NewNop()
	}
	if r.states == nil {
		r.states = func(string) *UpstreamState { return NewUpstreamState() }
	}
	for _, p := range c.Table.Providers() {
		o := c.Options[p.Name].withDefaults()
		t := health.NewTracker(o.FailWindow)
		t.SetClock(r.now)
		r.provs[p.Name] = &provider{p: p, opts: o, tracker: t, keys: make([]time.Time, max(len(p.APIKeys), 1)),
			healthy: make(map[healthKey]bool)}
	}
	for _, rt := range c.Table.Routes() {
		g := r.newGroup(rt)
		r.groups[rt] = g
		if !rt.IsGlob() {
			r.byName[rt.Pattern] = rt
		}
	}
	for _, u := range r.all {
		r.notify(u, u.st.breaker())
	}
	return r
}

// sleep waits d, or until done is closed.
func sleep(done <-chan struct{}, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-done:
		return false
	}
}

// notify tells the observer of u's breaker state.
func (r *Router) notify(u *Upstream, s State) {
	if r.obs != nil {
		r.obs.BreakerState(u, s)
	}
}

// Table returns the routing table the router was built from.
func (r *Router) Table() *providers.Table { return r.table }

// ForProvider returns a router of one provider serving every model ("*"),
// with default options: the routing of a caller that has no table.
func ForProvider(p *providers.Provider) *Router {
	return New(Config{Table: providers.SingleTable(p)})
}
