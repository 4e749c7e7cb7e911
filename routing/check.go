package routing

import (
	"context"
	"io"
	"net/http"
	"time"

	"go.uber.org/zap"

	"github.com/caddy-air/caddy-air/dialect/authn"
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

// RunHealthChecks runs the active health checks of every provider that
// has one, through rt, until ctx is done. It returns at once when none
// has.
func (r *Router) RunHealthChecks(ctx context.Context, rt http.RoundTripper) {
	done := make(chan struct{})
	n := 0
	for _, p := range r.provs {
		if p.opts.HealthCheck == nil {
			continue
		}
		n++
		go func() {
			defer func() { done <- struct{}{} }()
			r.checkLoop(ctx, rt, p)
		}()
	}
	for range n {
		<-done
	}
}

// checkLoop checks p's upstreams at its interval until ctx is done.
func (r *Router) checkLoop(ctx context.Context, rt http.RoundTripper, p *provider) {
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
		r.CheckProvider(ctx, rt, p.p.Name, hc)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// CheckProvider runs one round of health checks of the named provider:
// every base URL with every key.
func (r *Router) CheckProvider(ctx context.Context, rt http.RoundTripper, name string, hc HealthCheck) {
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
			ok := probe(ctx, rt, p.p, base, key, hc)
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

// probe sends one health check and reports whether it answered 2xx.
func probe(ctx context.Context, rt http.RoundTripper, p *providers.Provider, base, key string, hc HealthCheck) bool {
	ctx, cancel := context.WithTimeout(ctx, hc.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, trimSlash(base)+hc.Path, nil)
	if err != nil {
		return false
	}
	if p.Endpoint != nil {
		if p.Endpoint.Authorize(req, providers.Attempt{BaseURL: base, APIKey: key}) != nil {
			return false
		}
	} else if key != "" {
		authn.SetAuth(req.Header, p.Protocol, key, nil)
	}
	resp, err := rt.RoundTrip(req)
	if err != nil {
		return false
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	return resp.StatusCode >= 200 && resp.StatusCode < 300
}

// trimSlash removes a base URL's trailing slashes.
func trimSlash(s string) string {
	for len(s) > 0 && s[len(s)-1] == '/' {
		s = s[:len(s)-1]
	}
	return s
}
