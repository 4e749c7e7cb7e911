package routing

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/caddy-air/caddy-air/providers"
)

// HealthCheck is a provider's active health check: a GET of Path below
// each base URL, with each key, every Interval. An upstream whose last
// check did not answer 2xx leaves rotation until one does.
type HealthCheck struct {
	// Path is appended to the base URL. Default: "/models".
	Path string
	// Interval is the time between two checks. Default: 30s.
	Interval time.Duration
	// Timeout bounds one check. Default: 5s.
	Timeout time.Duration
}

// Defaults of HealthCheck.
const (
	DefaultHealthPath     = "/models"
	DefaultHealthInterval = 30 * time.Second
	DefaultHealthTimeout  = 5 * time.Second
)

// Prober sends one health check, a GET of path below attempt a of
// provider p (its base URL, with its key), under ctx, which bounds it,
// and reports whether it answered 2xx. Package upstream makes it
// (upstream.Prober), with the provider's credentials.
type Prober func(ctx context.Context, p *providers.Provider, a providers.Attempt, path string) bool

// RunHealthChecks runs the active health checks of every provider that
// has one, with probe, until ctx is done. It returns at once when none
// has.
func (r *Router) RunHealthChecks(ctx context.Context, probe Prober) {
	done := make(chan struct{})
	n := 0
	for _, p := range r.provs {
		if p.opts.HealthCheck == nil {
			continue
		}
		n++
		go func() {
			defer func() { done <- struct{}{} }()
			r.checkLoop(ctx, probe, p)
		}()
	}
	for range n {
		<-done
	}
}

// checkLoop checks p's upstreams at its interval until ctx is done.
func (r *Router) checkLoop(ctx context.Context, probe Prober, p *provider) {
	hc := *p.opts.HealthCheck
	if hc.Path == "" {
		hc.Path = DefaultHealthPath
	}
	if hc.Interval <= 0 {
		hc.Interval = DefaultHealthInterval
	}
	if hc.Timeout <= 0 {
		hc.Timeout = DefaultHealthTimeout
	}
	t := time.NewTicker(hc.Interval)
	defer t.Stop()
	for {
		r.CheckProvider(ctx, probe, p.p.Name, hc)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// CheckProvider runs one round of health checks of the named provider:
// every base URL with every key, each bounded by hc.Timeout.
func (r *Router) CheckProvider(ctx context.Context, probe Prober, name string, hc HealthCheck) {
	p := r.provs[name]
	if p == nil {
		return
	}
	keys := p.p.APIKeys
	if len(keys) == 0 {
		keys = []string{""}
	}
	for bi, base := range p.p.BaseURLs {
		for ki, key := range keys {
			pctx, cancel := context.WithTimeout(ctx, hc.Timeout)
			ok := probe(pctx, p.p, providers.Attempt{BaseURL: trimSlash(base), APIKey: key}, hc.Path)
			cancel()
			if p.setHealthy(bi, ki, ok) {
				f := []zap.Field{zap.String("provider", name), zap.String("base_url", publicURL(base)), zap.Int("key", ki)}
				if ok {
					r.log.Info("upstream passes its health check again: back in rotation", f...)
				} else {
					r.log.Warn("upstream failed its health check: out of rotation", f...)
				}
			}
		}
	}
}

// trimSlash removes a base URL's trailing slashes.
func trimSlash(s string) string {
	for len(s) > 0 && s[len(s)-1] == '/' {
		s = s[:len(s)-1]
	}
	return s
}
