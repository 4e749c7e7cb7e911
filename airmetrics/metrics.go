// Package airmetrics defines caddy-air's Prometheus metrics: the
// OpenTelemetry GenAI metrics in Prometheus form (gen_ai_*) and the
// gateway's own (air_*). It does not import Caddy: caddymodule creates one
// Metrics per process, registers it in the registry of every config it
// loads (Caddy makes a new registry per load; the collectors, and so the
// counters, stay the same), and binds it to each config's models with
// Bind.
//
// Label values are bounded by the configuration: models are the configured
// model ids or globs (anything else is "unknown"), providers the configured
// providers, and per-user labels exist only when the operator turns them
// on.
package airmetrics

import (
	"errors"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// Unknown is the label value of a model or provider that is not
// configured.
const Unknown = "unknown"

// Token types, the values of the gen_ai_token_type label.
const (
	TokenInput         = "input"
	TokenOutput        = "output"
	TokenCacheRead     = "cache_read"
	TokenCacheCreation = "cache_creation"
	TokenReasoning     = "reasoning"
)

// tokenTypes lists the token types in the order of Tokens' fields.
var tokenTypes = [...]string{TokenInput, TokenOutput, TokenCacheRead, TokenCacheCreation, TokenReasoning}

// Outcomes of a request, the values of the outcome label.
const (
	OutcomeOK            = "ok"
	OutcomePartial       = "partial"
	OutcomeCanceled      = "canceled"
	OutcomeTimeout       = "timeout"
	OutcomeUpstreamError = "upstream_error"
	OutcomeRejected      = "rejected"
)

// Reasons of a rejected request, the values of air_rejections_total's
// reason label.
const (
	ReasonBudget         = "budget"
	ReasonRateLimit      = "rate_limit"
	ReasonStorageFull    = "storage_full"
	ReasonInvalidRequest = "invalid_request"
	ReasonUnavailable    = "unavailable"
	// ReasonAuth is a request without a valid API key (401).
	ReasonAuth = "auth"
	// ReasonForbidden is a request its key may not make (403: a model
	// outside the key's scope).
	ReasonForbidden = "forbidden"
)

// Metrics holds every collector. Create it once per process with New and
// register it in each registry with Register.
type Metrics struct {
	tokenUsage  *prometheus.HistogramVec
	duration    *prometheus.HistogramVec
	ttft        *prometheus.HistogramVec
	tpot        *prometheus.HistogramVec
	requests    *prometheus.CounterVec
	cost        *prometheus.CounterVec
	unpriced    *prometheus.CounterVec
	attempts    *prometheus.CounterVec
	retries     *prometheus.CounterVec
	rejections  *prometheus.CounterVec
	openStreams *prometheus.GaugeVec
	commit      prometheus.Histogram
	tasks       *prometheus.CounterVec
	polls       *prometheus.CounterVec
	pollErrors  *prometheus.CounterVec
	state       *stateCollector
	breaker     *prometheus.GaugeVec
	breakers    breakerSeries
	keysOut     *prometheus.CounterVec
	cooldowns   *prometheus.CounterVec
	fallbacks   *prometheus.CounterVec

	userRequests *prometheus.CounterVec
	userTokens   *prometheus.CounterVec
	userCost     *prometheus.CounterVec
}

// Label names.
const (
	lOperation = "gen_ai_operation_name"
	lProvider  = "gen_ai_provider_name"
	lReqModel  = "gen_ai_request_model"
	lRespModel = "gen_ai_response_model"
	lTokenType = "gen_ai_token_type"
	lErrorType = "error_type"
)

// genAILabels are the labels of the gen_ai_* histograms.
var genAILabels = []string{lOperation, lProvider, lReqModel, lRespModel}

// New creates the collectors.
func New() *Metrics {
	m := &Metrics{
		tokenUsage: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "gen_ai_client_token_usage",
			Help:    "Tokens used per request, by token type (input, output, cache_read, cache_creation, reasoning).",
			Buckets: TokenBuckets,
		}, append(genAILabels[:4:4], lTokenType)),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "gen_ai_server_request_duration_seconds",
			Help:    "Time from the request's arrival to the end of its answer; error_type is empty on success.",
			Buckets: DurationBuckets,
		}, append(genAILabels[:4:4], lErrorType)),
		ttft: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "gen_ai_server_time_to_first_token_seconds",
			Help:    "Time from a streamed request's arrival to its first event written to the client.",
			Buckets: TTFTBuckets,
		}, genAILabels),
		tpot: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "gen_ai_server_time_per_output_token_seconds",
			Help:    "Time per output token after the first, of streamed requests that completed.",
			Buckets: TPOTBuckets,
		}, genAILabels),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "air_requests_total",
			Help: "Requests that reached a handler, refusals included, by GenAI operation, endpoint, provider, model, outcome and HTTP status.",
		}, []string{"operation", "endpoint", "provider", "model", "outcome", "status"}),
		cost: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "air_cost_total",
			Help: "Cost recorded in the ledger, in currency units.",
		}, []string{"currency", "provider", "model"}),
		unpriced: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "air_unpriced_charges_total",
			Help: "Charges recorded in the ledger without a price (tool calls, audio or image tokens the price file has no rule for), by charge kind; their cost is missing from air_cost_total.",
		}, []string{"provider", "model", "charge"}),
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "air_upstream_attempts_total",
			Help: "Upstream attempts of chat and messages requests, by provider and result.",
		}, []string{"provider", "result"}),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "air_upstream_retries_total",
			Help: "Upstream attempts that were retried, by provider and the result that caused the retry.",
		}, []string{"provider", "result"}),
		rejections: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "air_rejections_total",
			Help: "Requests the gateway refused before any upstream was called, by reason.",
		}, []string{"reason"}),
		openStreams: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "air_open_streams",
			Help: "Streaming requests in flight.",
		}, []string{"operation", "provider"}),
		commit: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "air_ledger_commit_duration_seconds",
			Help:    "Time of each ledger batch commit (journal append and sync).",
			Buckets: CommitBuckets,
		}),
		tasks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "air_tasks_total",
			Help: "Image and video tasks reaching a status (running when created, succeeded, failed), by kind.",
		}, []string{"kind", "status"}),
		polls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "air_task_polls_total",
			Help: "Upstream polls of running tasks, by provider.",
		}, []string{"provider"}),
		pollErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "air_task_poll_errors_total",
			Help: "Upstream polls of running tasks that failed, by provider.",
		}, []string{"provider"}),
		state: newStateCollector(),
		breaker: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "air_upstream_breaker_state",
			Help: "Circuit breaker state of each upstream (deployment × base URL × key index): 0 closed, 1 half-open, 2 open.",
		}, []string{"provider", "deployment", "base_url", "key"}),
		keysOut: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "air_upstream_keys_rejected_total",
			Help: "Provider keys taken out of rotation after a 401, 402 or quota error, by provider and key index.",
		}, []string{"provider", "key"}),
		cooldowns: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "air_upstream_cooldowns_total",
			Help: "Upstreams put in cooldown after a 429, by provider and deployment.",
		}, []string{"provider", "deployment"}),
		fallbacks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "air_fallbacks_total",
			Help: "Requests that moved to a fallback model, by model and fallback.",
		}, []string{"model", "fallback"}),
		userRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "air_user_requests_total",
			Help: "Requests by user, API key and outcome (only with metrics { per_user }).",
		}, []string{"user", "key_id", "outcome"}),
		userTokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "air_user_tokens_total",
			Help: "Tokens by user, API key and token type (only with metrics { per_user }).",
		}, []string{"user", "key_id", lTokenType}),
		userCost: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "air_user_cost_total",
			Help: "Cost in currency units by user, API key and currency (only with metrics { per_user }).",
		}, []string{"user", "key_id", "currency"}),
	}
	return m
}

// collectors returns the collectors registered by Register.
func (m *Metrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.tokenUsage, m.duration, m.ttft, m.tpot, m.requests, m.cost, m.unpriced,
		m.attempts, m.retries, m.rejections, m.openStreams, m.commit, m.tasks, m.polls, m.pollErrors, m.state,
		m.breaker, m.keysOut, m.cooldowns, m.fallbacks}
}

// perUserCollectors returns the collectors of per-user metrics.
func (m *Metrics) perUserCollectors() []prometheus.Collector {
	return []prometheus.Collector{m.userRequests, m.userTokens, m.userCost}
}

// Register registers the collectors in reg, and the per-user ones too when
// perUser is set. Registering them again in the same registry is not an
// error, so every module of a config may call it.
func (m *Metrics) Register(reg prometheus.Registerer, perUser bool) error {
	cs := m.collectors()
	if perUser {
		cs = append(cs, m.perUserCollectors()...)
	}
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			var are prometheus.AlreadyRegisteredError
			if errors.As(err, &are) && are.ExistingCollector == c {
				continue
			}
			return err
		}
	}
	return nil
}

// BreakerState sets the breaker state gauge of an upstream: 0 closed,
// 1 half-open, 2 open.
func (m *Metrics) BreakerState(provider, deployment, baseURL string, key, state int) {
	l := Upstream{provider, deployment, baseURL, key}
	m.breakers.add(l)
	m.breaker.WithLabelValues(l.values()...).Set(float64(state))
}

// KeyRejected counts a provider key taken out of rotation.
func (m *Metrics) KeyRejected(provider string, key int) {
	m.keysOut.WithLabelValues(provider, strconv.Itoa(key)).Inc()
}

// Cooldown counts an upstream put in cooldown.
func (m *Metrics) Cooldown(provider, deployment string) {
	m.cooldowns.WithLabelValues(provider, deployment).Inc()
}

// Fallback counts a request moving from model to fallback.
func (m *Metrics) Fallback(model, fallback string) {
	m.fallbacks.WithLabelValues(model, fallback).Inc()
}

// ObserveCommit records a ledger batch commit that took seconds.
func (m *Metrics) ObserveCommit(seconds float64) { m.commit.Observe(seconds) }

// Names lists the metric families this package exports, as they appear in
// the exposition format (histograms by their base name).
func Names() []string {
	return []string{
		"gen_ai_client_token_usage",
		"gen_ai_server_request_duration_seconds",
		"gen_ai_server_time_to_first_token_seconds",
		"gen_ai_server_time_per_output_token_seconds",
		"air_requests_total",
		"air_cost_total",
		"air_unpriced_charges_total",
		"air_upstream_attempts_total",
		"air_upstream_retries_total",
		"air_rejections_total",
		"air_open_streams",
		"air_ledger_commit_duration_seconds",
		"air_ledger_queue_depth",
		"air_ledger_lag_seconds",
		"air_ledger_unreadable_regions",
		"air_tasks_total",
		"air_task_polls_total",
		"air_task_poll_errors_total",
		"air_upstream_breaker_state",
		"air_upstream_keys_rejected_total",
		"air_upstream_cooldowns_total",
		"air_fallbacks_total",
		"air_store_size_bytes",
		"air_store_free_bytes",
		"air_store_free_margin_bytes",
		"air_request_logs_dropped_total",
		"air_request_logs_failed_total",
		"air_user_requests_total",
		"air_user_tokens_total",
		"air_user_cost_total",
	}
}
