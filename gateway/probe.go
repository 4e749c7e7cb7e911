package gateway

import (
	"context"
	"sync"
	"time"

	"github.com/caddy-air/caddy-air/store"
)

// probeInterval is how long the result of a store write probe is reused:
// health checks, however frequent, cost at most one store write per
// interval.
const probeInterval = 5 * time.Second

// probeTimeout bounds a store write probe.
const probeTimeout = 2 * time.Second

// Probe tests, at most once per probeInterval, that the store takes a
// write: health checks and alerts, however frequent, cost at most one
// store write per interval.
type Probe struct {
	mu  sync.Mutex
	at  time.Time
	err error
}

// Check returns the error of a recent write probe of s, probing anew when
// the last one is older than probeInterval.
func (p *Probe) Check(ctx context.Context, s store.Prober) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.at.IsZero() && time.Since(p.at) < probeInterval {
		return p.err
	}
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	p.err = nil
	if s != nil {
		p.err = s.Probe(ctx)
	}
	p.at = time.Now()
	return p.err
}
