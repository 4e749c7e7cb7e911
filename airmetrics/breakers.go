package airmetrics

import (
	"strconv"
	"sync"
)

// Upstream names one upstream in the breaker gauge's labels.
type Upstream struct {
	// Provider is the provider's name.
	Provider string
	// Deployment is the deployment's name.
	Deployment string
	// BaseURL is the base URL without user info or query.
	BaseURL string
	// Key is the index of the provider key.
	Key int
}

// values returns u's label values, in the gauge's order.
func (u Upstream) values() []string {
	return []string{u.Provider, u.Deployment, u.BaseURL, strconv.Itoa(u.Key)}
}

// breakerSeries remembers the upstreams whose breaker gauge was set, so
// that a config load can delete the series of those it no longer has.
type breakerSeries struct {
	mu  sync.Mutex
	set map[Upstream]struct{}
}

// add remembers u.
func (b *breakerSeries) add(u Upstream) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.set == nil {
		b.set = map[Upstream]struct{}{}
	}
	b.set[u] = struct{}{}
}

// RetainBreakers deletes the breaker gauge series of every upstream but
// keep, the upstreams of the config that just loaded: the gauge of an
// upstream that a reload removed would otherwise keep its last state
// until the process restarts (an open breaker, and the alert on it,
// for ever).
func (m *Metrics) RetainBreakers(keep []Upstream) {
	kept := make(map[Upstream]bool, len(keep))
	for _, u := range keep {
		kept[u] = true
	}
	m.breakers.mu.Lock()
	defer m.breakers.mu.Unlock()
	for u := range m.breakers.set {
		if !kept[u] {
			m.breaker.DeleteLabelValues(u.values()...)
			delete(m.breakers.set, u)
		}
	}
}
