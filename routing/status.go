package routing

import (
	"sort"
	"time"
)

// UpstreamStatus is the state of one upstream, for the admin API and
// `caddy air providers`. It never holds the key itself.
type UpstreamStatus struct {
	// Provider, Deployment, BaseURL and Key name the upstream; Key is the
	// key's index in the provider's keys.
	Provider   string `json:"provider"`
	Deployment string `json:"deployment"`
	BaseURL    string `json:"base_url"`
	Key        int    `json:"key"`
	// Breaker is closed, half_open or open.
	Breaker string `json:"breaker"`
	// Available says whether a request may go to the upstream now;
	// Reason says why not (cooldown, breaker_open, breaker_probing,
	// key_rejected, health_check, limit).
	Available bool   `json:"available"`
	Reason    string `json:"reason,omitempty"`
	// Until is when the upstream's cooldown, open breaker or rejected key
	// ends, if it waits on one.
	Until *time.Time `json:"until,omitempty"`
	// Attempts and Failures count the attempts within the failure window.
	Attempts int64 `json:"attempts"`
	Failures int64 `json:"failures"`
	// InFlight counts the deployment's requests in flight.
	InFlight int64 `json:"in_flight"`
	// LatencySeconds is the deployment's moving average of time to first
	// byte; 0 until measured.
	LatencySeconds float64 `json:"latency_seconds"`
}

// Status returns the state of every upstream, by provider, deployment,
// base URL and key.
func (r *Router) Status() []UpstreamStatus {
	now := r.now()
	out := make([]UpstreamStatus, 0, len(r.all))
	for _, u := range r.all {
		ok, reason := u.available(now)
		u.st.mu.Lock()
		state := u.st.state
		if state == Open && !now.Before(u.st.openUntil) {
			state = HalfOpen // due for its probe
		}
		u.st.mu.Unlock()
		st := u.prov.tracker.Stats(u.id)
		s := UpstreamStatus{Provider: u.Provider, Deployment: u.dep.name, BaseURL: u.PublicBaseURL(), Key: u.Key,
			Breaker: state.String(), Available: ok, Reason: reason, Attempts: st.Attempts, Failures: st.Failures,
			InFlight: u.dep.inflight.Load(), LatencySeconds: u.dep.latency()}
		if at := u.readyAt(now, true); !at.IsZero() {
			s.Until = &at
		}
		out = append(out, s)
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Provider != b.Provider {
			return a.Provider < b.Provider
		}
		if a.Deployment != b.Deployment {
			return a.Deployment < b.Deployment
		}
		if a.BaseURL != b.BaseURL {
			return a.BaseURL < b.BaseURL
		}
		return a.Key < b.Key
	})
	return out
}

// Upstreams returns every upstream of the router.
func (r *Router) Upstreams() []*Upstream { return append([]*Upstream(nil), r.all...) }
