package routing

import (
	"fmt"
	"math"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/caddy-air/caddy-air/providers"
)

// State is a breaker's state.
type State int

// Breaker states.
const (
	// Closed lets requests through.
	Closed State = iota
	// HalfOpen lets one probe request through.
	HalfOpen
	// Open lets none through until its fail_duration has passed.
	Open
)

// String names the state: closed, half_open or open.
func (s State) String() string {
	switch s {
	case HalfOpen:
		return "half_open"
	case Open:
		return "open"
	}
	return "closed"
}

// Upstream is one deployment × base URL × key, the unit of breakers,
// cooldowns and per-upstream limits.
type Upstream struct {
	// Provider is the provider's name.
	Provider string
	// Model is the model name sent upstream ("" when the client's is).
	Model string
	// BaseURL is the base URL, without a trailing slash.
	BaseURL string
	// Key is the index of the key in the provider's keys.
	Key int

	base   int
	apiKey string
	id     string
	dep    *deployment
	prov   *provider
	limit  limiter

	st *UpstreamState
}

// ID names the upstream in the failure tracker: deployment, base URL
// index and key index.
func (u *Upstream) ID() string { return u.id }

// Deployment names the upstream's deployment, "provider/model".
func (u *Upstream) Deployment() string { return u.dep.name }

// PublicBaseURL is the base URL without user info or query, fit for
// labels and logs.
func (u *Upstream) PublicBaseURL() string { return publicURL(u.BaseURL) }

// PublicURL is s, a base URL, without what may hold a secret (user info,
// query, fragment), fit for pages, labels and logs.
func PublicURL(s string) string { return publicURL(s) }

// publicURL strips what may hold a secret from a URL.
func publicURL(s string) string {
	p, err := url.Parse(s)
	if err != nil {
		return "invalid-url"
	}
	p.User, p.RawQuery, p.Fragment = nil, "", ""
	return p.String()
}

// deployment is the routing state of one providers.Deployment.
type deployment struct {
	d         *providers.Deployment
	name      string
	upstreams []*Upstream
	next      atomic.Uint64 // round robin over upstreams
	limit     limiter
	inflight  atomic.Int64
	// ewma is the float64 bits of the time to first byte's moving
	// average, in seconds; 0 until the first sample.
	ewma atomic.Uint64
}

// ewmaAlpha is the weight of a new sample in the latency average.
const ewmaAlpha = 0.3

// observeTTFB folds a time to first byte into the deployment's average.
func (d *deployment) observeTTFB(ttfb time.Duration) {
	s := ttfb.Seconds()
	for {
		old := d.ewma.Load()
		v := math.Float64frombits(old)
		nv := s
		if old != 0 {
			nv = ewmaAlpha*s + (1-ewmaAlpha)*v
		}
		if d.ewma.CompareAndSwap(old, math.Float64bits(nv)) {
			return
		}
	}
}

// latency is the deployment's average time to first byte in seconds.
func (d *deployment) latency() float64 { return math.Float64frombits(d.ewma.Load()) }

// newDeployment returns the state of d, with its upstreams: its base URLs
// and keys paired in turn. Models that share a deployment (same provider,
// upstream model and keys) share its state: its breakers, cooldowns,
// latency, and the limits of its first declaration.
func (r *Router) newDeployment(d *providers.Deployment) *deployment {
	id := fmt.Sprint(d.Name(), d.Keys)
	if dep := r.deps[id]; dep != nil {
		return dep
	}
	dep := &deployment{d: d, name: d.Name(), limit: limiter{maxConcurrent: d.MaxConcurrent, rpm: d.RPM, tpm: d.TPM}}
	r.deps[id] = dep
	prov := r.provs[d.Provider.Name]
	keys := d.Keys
	if len(keys) == 0 {
		for i := range max(len(d.Provider.APIKeys), 1) {
			keys = append(keys, i)
		}
	}
	// Base URLs and keys pair up in turn, as many upstreams as the
	// longer list: every key is used, on every base URL in turn.
	n := max(len(d.Provider.BaseURLs), len(keys))
	if len(d.Provider.BaseURLs) == 0 {
		n = 0
	}
	for j := range n {
		bi, k := j%len(d.Provider.BaseURLs), keys[j%len(keys)]
		u := &Upstream{Provider: d.Provider.Name, Model: d.UpstreamModel, BaseURL: strings.TrimRight(d.Provider.BaseURLs[bi], "/"), Key: k,
			base: bi, dep: dep, prov: prov, id: fmt.Sprintf("%s#%d#%d#%d", dep.name, len(r.deps), bi, k),
			limit: limiter{maxConcurrent: prov.opts.MaxConcurrent, rpm: prov.opts.RPM, tpm: prov.opts.TPM}}
		if k < len(d.Provider.APIKeys) {
			u.apiKey = d.Provider.APIKeys[k]
		}
		u.st = r.states(Identity(u.Provider, u.Model, u.BaseURL, u.apiKey))
		dep.upstreams = append(dep.upstreams, u)
		r.all = append(r.all, u)
	}
	return dep
}

// available reports whether u may take a request at now: breaker not
// open (or due for its probe), not cooling down, key not rejected, health
// check passing, and limits not reached. The reason is empty when it may.
func (u *Upstream) available(now time.Time) (ok bool, reason string) {
	u.st.mu.Lock()
	switch {
	case now.Before(u.st.coolUntil):
		reason = "cooldown"
	case u.st.state == Open && now.Before(u.st.openUntil):
		reason = "breaker_open"
	case u.st.state == HalfOpen && u.st.probing:
		reason = "breaker_probing"
	}
	u.st.mu.Unlock()
	if reason != "" {
		return false, reason
	}
	if u.prov.keyRejected(u.Key, now) {
		return false, "key_rejected"
	}
	if !u.prov.isHealthy(u.base, u.Key) {
		return false, "health_check"
	}
	if !u.limit.allows(now, 0) || !u.dep.limit.allows(now, 0) {
		return false, "limit"
	}
	return true, ""
}

// readyAt is when u, unavailable for a cooldown, a breaker or its key,
// may take requests again; zero when it is not waiting on the clock.
// Without breaker, an upstream whose breaker is open counts as not
// waiting on the clock at all.
func (u *Upstream) readyAt(now time.Time, breaker bool) time.Time {
	u.st.mu.Lock()
	at := u.st.coolUntil
	open := u.st.state == Open
	if open && breaker && u.st.openUntil.After(at) {
		at = u.st.openUntil
	}
	u.st.mu.Unlock()
	if open && !breaker {
		// A cooldown ending before the breaker's does not make u ready.
		return time.Time{}
	}
	if k := u.prov.keyUntil(u.Key); k.After(at) {
		at = k
	}
	if !at.After(now) {
		return time.Time{}
	}
	return at
}

// acquire takes u for one attempt: a breaker due for its probe becomes
// half-open with this attempt as its probe. It fails if u became
// unavailable since it was picked.
func (r *Router) acquire(u *Upstream, now time.Time, tokens int64) bool {
	if ok, _ := u.available(now); !ok {
		return false
	}
	u.st.mu.Lock()
	if now.Before(u.st.coolUntil) || (u.st.state == Open && now.Before(u.st.openUntil)) || (u.st.state == HalfOpen && u.st.probing) {
		u.st.mu.Unlock()
		return false // another request took it meanwhile
	}
	switch {
	case u.st.state == Open:
		u.st.state, u.st.probing = HalfOpen, true
		u.st.mu.Unlock()
		r.notify(u, HalfOpen)
		r.log.Info("upstream breaker half-open: sending a probe", u.fields()...)
	case u.st.state == HalfOpen:
		u.st.probing = true
		u.st.mu.Unlock()
	default:
		u.st.mu.Unlock()
	}
	u.limit.take(now, tokens)
	u.dep.limit.take(now, tokens)
	u.dep.inflight.Add(1)
	return true
}

// release gives back what acquire took.
func (u *Upstream) release() {
	u.limit.done()
	u.dep.limit.done()
	u.dep.inflight.Add(-1)
}

// fields are u's log fields; the key is named by its index only.
func (u *Upstream) fields() []zap.Field {
	return []zap.Field{zap.String("provider", u.Provider), zap.String("deployment", u.dep.name),
		zap.String("base_url", u.PublicBaseURL()), zap.Int("key", u.Key)}
}

// succeeded records an attempt that worked: a half-open breaker closes.
func (r *Router) succeeded(u *Upstream) {
	u.prov.tracker.Record(u.id, true)
	u.st.mu.Lock()
	closed := u.st.state != Closed
	if closed {
		u.st.state, u.st.probing = Closed, false
		u.prov.tracker.Reset(u.id)
	}
	u.st.mu.Unlock()
	if closed {
		r.notify(u, Closed)
		r.log.Info("upstream breaker closed: the probe succeeded", u.fields()...)
	}
}

// failed records an attempt that failed for the upstream's fault: a
// half-open breaker opens again, a closed one opens when the failure rate
// within the window crosses the threshold.
func (r *Router) failed(u *Upstream, now time.Time) {
	o := u.prov.opts
	u.prov.tracker.Record(u.id, false)
	st := u.prov.tracker.Stats(u.id)
	u.st.mu.Lock()
	open := u.st.state == HalfOpen ||
		(u.st.state == Closed && st.Attempts >= o.MinRequests && 1-st.SuccessRate() >= o.FailureRate)
	if open {
		u.st.state, u.st.probing, u.st.openUntil = Open, false, now.Add(o.FailDuration)
	}
	u.st.mu.Unlock()
	if open {
		r.notify(u, Open)
		r.log.Warn("upstream breaker opened", append(u.fields(), zap.Int64("attempts", st.Attempts),
			zap.Int64("failures", st.Failures), zap.Duration("fail_duration", o.FailDuration))...)
	}
}

// cool puts u in cooldown for d (a 429), and frees its probe, if any.
func (r *Router) cool(u *Upstream, now time.Time, d time.Duration) {
	u.st.mu.Lock()
	if until := now.Add(d); until.After(u.st.coolUntil) {
		u.st.coolUntil = until
	}
	u.st.probing = false
	u.st.mu.Unlock()
	if r.obs != nil {
		r.obs.Cooldown(u)
	}
}

// unprobe frees u's probe without a verdict (the client left, or the
// answer blamed the request).
func (u *Upstream) unprobe() {
	u.st.mu.Lock()
	u.st.probing = false
	u.st.mu.Unlock()
}

// rejectKey takes key out of rotation for the provider's key cooldown.
func (r *Router) rejectKey(u *Upstream, now time.Time, status int) {
	p := u.prov
	p.keysMu.Lock()
	first := !now.Before(p.keys[u.Key])
	p.keys[u.Key] = now.Add(p.opts.KeyCooldown)
	p.keysMu.Unlock()
	u.unprobe()
	if first {
		r.log.Warn("provider key rejected: out of rotation", zap.String("provider", u.Provider), zap.Int("key", u.Key),
			zap.Int("status", status), zap.Duration("for", p.opts.KeyCooldown))
		if r.obs != nil {
			r.obs.KeyRejected(u.Provider, u.Key)
		}
	}
}

// keyRejected reports whether key is out of rotation at now.
func (p *provider) keyRejected(key int, now time.Time) bool { return now.Before(p.keyUntil(key)) }

// keyUntil is until when key is out of rotation.
func (p *provider) keyUntil(key int) time.Time {
	p.keysMu.Lock()
	defer p.keysMu.Unlock()
	if key < len(p.keys) {
		return p.keys[key]
	}
	return time.Time{}
}

// isHealthy reports the last active health check of a base URL × key.
func (p *provider) isHealthy(base, key int) bool {
	p.healthMu.RLock()
	ok, seen := p.healthy[healthKey{base, key}]
	p.healthMu.RUnlock()
	return !seen || ok
}

// setHealthy records an active health check's result and reports whether
// it changed.
func (p *provider) setHealthy(base, key int, ok bool) bool {
	p.healthMu.Lock()
	defer p.healthMu.Unlock()
	old, seen := p.healthy[healthKey{base, key}]
	p.healthy[healthKey{base, key}] = ok
	return (!seen && !ok) || (seen && old != ok)
}

// acquireForce takes u for a pinned attempt, which goes whatever u's
// state: it is the only upstream that can serve it.
func (r *Router) acquireForce(u *Upstream, now time.Time, tokens int64) bool {
	u.limit.take(now, tokens)
	u.dep.limit.take(now, tokens)
	u.dep.inflight.Add(1)
	return true
}
