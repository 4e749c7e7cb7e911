package airmetrics

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Attempt results, the values of the result label of
// air_upstream_attempts_total and air_upstream_retries_total.
const (
	ResultOK           = "ok"
	ResultStatus4xx    = "status_4xx"
	ResultStatus429    = "status_429"
	ResultStatus5xx    = "status_5xx"
	ResultConnectError = "connect_error"
	ResultTimeout      = "timeout"
	ResultCanceled     = "canceled"
)

// attemptResults lists the attempt results.
var attemptResults = [...]string{ResultOK, ResultStatus4xx, ResultStatus429, ResultStatus5xx, ResultConnectError, ResultTimeout, ResultCanceled}

// providerMetrics holds the resolved children of one provider.
type providerMetrics struct {
	attempts, retries map[string]prometheus.Counter
	polls, pollErrors prometheus.Counter
}

func newProviderMetrics(m *Metrics, name string) *providerMetrics {
	p := &providerMetrics{attempts: make(map[string]prometheus.Counter), retries: make(map[string]prometheus.Counter),
		polls: m.polls.WithLabelValues(name), pollErrors: m.pollErrors.WithLabelValues(name)}
	for _, res := range attemptResults {
		p.attempts[res] = m.attempts.WithLabelValues(name, res)
		p.retries[res] = m.retries.WithLabelValues(name, res)
	}
	return p
}

// Attempt records an upstream attempt of provider with result (one of the
// Result* constants), and whether it was retried.
func (o *Observer) Attempt(provider, result string, retried bool) {
	if o == nil {
		return
	}
	p := o.providers[provider]
	if p == nil {
		return
	}
	if c := p.attempts[result]; c != nil {
		c.Inc()
	}
	if c := p.retries[result]; retried && c != nil {
		c.Inc()
	}
}

// TaskStatus records a task of kind (image, video) reaching status
// (running, succeeded, failed).
func (o *Observer) TaskStatus(kind, status string) {
	if o == nil {
		return
	}
	o.m.tasks.WithLabelValues(kind, status).Inc()
}

// TaskPolled records an upstream poll of a task on provider, and whether
// it failed.
func (o *Observer) TaskPolled(provider string, failed bool) {
	if o == nil {
		return
	}
	p := o.providers[provider]
	if p == nil {
		return
	}
	p.polls.Inc()
	if failed {
		p.pollErrors.Inc()
	}
}
