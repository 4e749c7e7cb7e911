// Package caddymodule adapts caddy-air's domain packages to Caddy: the
// `air` app that owns shared state, the HTTP handlers (air_auth, air_chat,
// air_messages, air_count_tokens, air_embeddings, air_images, air_tasks,
// air_models, air_media, air_mock, air_console, air_not_found),
// the air_errors listener wrapper, the admin API and the `caddy air`
// command. It holds Caddy glue only; the behaviour lives
// in the domain packages.
package caddymodule

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp/reverseproxy"
	"go.uber.org/zap"

	"github.com/caddy-air/caddy-air/airmetrics"
	"github.com/caddy-air/caddy-air/billing"
	"github.com/caddy-air/caddy-air/health"
	"github.com/caddy-air/caddy-air/jsonlimit"
	"github.com/caddy-air/caddy-air/providers"
	"github.com/caddy-air/caddy-air/routing"
)

func init() {
	caddy.RegisterModule(App{})
}

// Defaults of the app's settings.
const (
	defaultMaxRequestBody  = 16 << 20
	defaultLedgerRetention = 90 * 24 * time.Hour
	defaultTaskTTL         = 24 * time.Hour
	defaultPollInterval    = 5 * time.Second
	defaultProviderTimeout = 10 * time.Minute
	defaultRetries         = 2
	// stopFlushTimeout bounds how long Stop waits for queued ledger
	// records.
	stopFlushTimeout = 10 * time.Second
	// ledgerWait bounds how long the end of a response waits for its
	// record to be durable; past it the client gets an error instead.
	ledgerWait = 10 * time.Second
)

// App is the `air` app: it owns the state shared by caddy-air's handlers
// (the store, keys, prices, ledger, budgets, provider routes and the task
// poller). Configure it with the global Caddyfile option `air { … }`.
type App struct {
	// Storage selects where state is kept. Default: Badger in the "air"
	// folder of Caddy's data directory.
	Storage *Storage `json:"storage,omitempty"`
	// Prices is the path of the JSON price file. Without one, every model is
	// served unpriced.
	Prices string `json:"prices,omitempty"`
	// LedgerRetention is how long ledger records are kept. Default: 90 days.
	LedgerRetention caddy.Duration `json:"ledger_retention,omitempty"`
	// LedgerCommitInterval is the least time between two syncs of the
	// ledger's journal: the records of requests that end meanwhile share
	// the next sync, and their responses' last bytes wait for it. Zero
	// syncs every group of records at once (more CPU, less latency).
	// Default: 25ms.
	LedgerCommitInterval *caddy.Duration `json:"ledger_commit_interval,omitempty"`
	// MaxRequestBody is the largest request body accepted, in bytes.
	// Default: 16 MiB. Larger bodies get 413.
	MaxRequestBody int64 `json:"max_request_body,omitempty"`
	// MinFreeSpace is the free space, in bytes, that the storage's file
	// system must keep beyond what the store's sparse files may still
	// claim; below it new billable requests get 507 storage_full before
	// they reach an upstream. Default: 64 MiB.
	MinFreeSpace int64 `json:"min_free_space,omitempty"`
	// MaxJSONDepth is how deeply the JSON that caddy-air reads may nest:
	// request bodies of every endpoint and of the mock provider, admin API
	// bodies, and upstream responses and stream events. A request body
	// nested deeper gets 400 naming the limit; an upstream response nested
	// deeper is forwarded untouched and its usage estimated. `[]` is one
	// level deep. Default: 128.
	MaxJSONDepth int `json:"max_json_depth,omitempty"`
	// MaxBufferedBodies bounds the memory of all request bodies that the
	// air handlers of the process buffer at once, in bytes, charged as each
	// body arrives. A request whose body does not fit gets 503 with
	// Retry-After. Default: 256 MiB.
	MaxBufferedBodies int64 `json:"max_buffered_bodies,omitempty"`
	// Providers are the upstream services.
	Providers []*ProviderConfig `json:"providers,omitempty"`
	// Models map model ids or globs to providers.
	Models []*ModelConfig `json:"models,omitempty"`
	// Tasks tunes the image and video task service.
	Tasks *TasksConfig `json:"tasks,omitempty"`
	// Responses tunes the poller that bills background responses.
	Responses *ResponsesConfig `json:"responses,omitempty"`
	// Health tunes the health checks.
	Health *HealthConfig `json:"health,omitempty"`
	// Metrics configures the Prometheus metrics. Default: on, without
	// per-user labels.
	Metrics *MetricsConfig `json:"metrics,omitempty"`

	ctx       caddy.Context
	logger    *zap.Logger
	routes    *providers.Table
	transport *reverseproxy.HTTPTransport
	poolKey   string
	prices    *billing.PriceTable
	// priceText is the price file as loaded, for the console.
	priceText string
	live      *live
	metrics   *airmetrics.Observer // nil when metrics are off
	cancel    context.CancelFunc
	done      chan struct{}
	// tracker counts each provider's upstream attempts, for health.
	tracker *health.Tracker
	// router picks the upstream of every attempt.
	router *routing.Router
	// stateRefs are the identities of the upstream states the router
	// took from upstreamStates, given back on Cleanup.
	stateRefs []string
	// probe tests that the store takes writes, for health.
	probe *storeProbe
}

// live is what a started config serves with; handlers read it per request.
type live struct {
	state atomic.Pointer[state]
	rt    atomic.Pointer[runtime]
	// stopped is set by Stop, which releases the state once.
	stopped atomic.Bool
}

// Storage selects the state backend.
type Storage struct {
	// Backend is the store implementation: "badger" (embedded, one
	// instance; the default) or "postgres" (shared by several instances).
	Backend string `json:"backend,omitempty"`
	// Dir is the Badger database directory. Placeholders such as
	// {env.AIR_DATA_DIR} are expanded at load time.
	Dir string `json:"dir,omitempty"`
	// DSN is the PostgreSQL connection string of the postgres backend, as a
	// URL (postgres://user:password@host:5432/db) or in keyword form. It is
	// a secret: give it as a placeholder such as {env.AIR_PG_DSN}, expanded
	// at load time, so that the config (which the admin API serves) holds
	// only the placeholder. caddy-air never logs it.
	DSN string `json:"dsn,omitempty"`
	// IntentGather is, on postgres, the least time between the starts of
	// two commits of ledger intents under load: the intents of requests
	// that arrive meanwhile share the next commit, and those requests
	// wait up to this long more before their upstream call (an idle
	// instance commits at once). Zero commits as soon as the previous
	// commit ended. Default: 20ms.
	IntentGather *caddy.Duration `json:"intent_gather,omitempty"`

	// dsn is DSN with its placeholders replaced.
	dsn string
}

// ProviderConfig declares one upstream provider.
type ProviderConfig struct {
	// Name identifies the provider in model lines and the ledger.
	Name string `json:"name"`
	// Protocol is "openai", "anthropic" or "dashscope".
	Protocol string `json:"protocol"`
	// BaseURLs are the provider's API base URLs, e.g.
	// "https://api.openai.com/v1". Placeholders like {env.X} are expanded.
	BaseURLs []string `json:"base_urls"`
	// APIKeys are the provider's credentials, used in turn with BaseURLs.
	// Placeholders like {env.X} are expanded.
	APIKeys []string `json:"api_keys,omitempty"`
	// Timeout bounds a non-streaming request, the wait for response headers
	// and the silence between two stream events. Default: 10 minutes.
	Timeout caddy.Duration `json:"timeout,omitempty"`
	// TryTimeout bounds one attempt's wait for the response headers. An
	// attempt without them by then is abandoned (its connection closed),
	// counts as a timeout for the upstream's breaker, and the request
	// moves on to its next attempt (next deployment or upstream, with the
	// usual backoff), as after a refused connection; never after a byte
	// reached the client, and never for a task create (the provider may
	// have taken the job) nor a request pinned to the deployment holding
	// a stored response. It must be shorter than Timeout. A non-streaming
	// answer's headers come only once it is complete, so keep it above
	// the longest non-streaming answer the provider's models give. The
	// name follows reverse_proxy's lb_try_duration and lb_try_interval:
	// it bounds one try, and what follows it is the next try. Default: 0,
	// no bound (an attempt waits for Timeout, which ends the request).
	TryTimeout caddy.Duration `json:"try_timeout,omitempty"`
	// Retries is how many more attempts a request gets on the next base URL
	// or key after a connection error, 429 or 5xx before the first response
	// byte. Default: 2.
	Retries *int `json:"retries,omitempty"`
	// FailDuration is how long an upstream's open breaker keeps it out of
	// rotation before a probe. Default: 30s.
	FailDuration caddy.Duration `json:"fail_duration,omitempty"`
	// FailureRate is the share of failed attempts within FailWindow that
	// opens an upstream's breaker. Default: 0.5.
	FailureRate float64 `json:"failure_rate,omitempty"`
	// MinRequests is how many attempts within FailWindow an upstream must
	// have made before its failure rate is judged. Default: 5.
	MinRequests int `json:"min_requests,omitempty"`
	// FailWindow is the span of the failure rate. Default: 1m.
	FailWindow caddy.Duration `json:"fail_window,omitempty"`
	// Cooldown is how long an upstream that answered 429 without
	// Retry-After is out of rotation. Default: 5s.
	Cooldown caddy.Duration `json:"cooldown,omitempty"`
	// KeyCooldown is how long a key the provider rejected (401, 402, 403,
	// quota spent) is out of rotation. Default: 10m.
	KeyCooldown caddy.Duration `json:"key_cooldown,omitempty"`
	// MaxConcurrent bounds the requests in flight per base URL × key.
	MaxConcurrent int `json:"max_concurrent,omitempty"`
	// RPM and TPM bound the requests and estimated tokens per minute per
	// base URL × key.
	RPM int `json:"rpm,omitempty"`
	TPM int `json:"tpm,omitempty"`
	// HealthCheck, when set, probes each base URL × key at an interval.
	HealthCheck *HealthCheckConfig `json:"health_check,omitempty"`
}

// HealthCheckConfig is a provider's active health check.
type HealthCheckConfig struct {
	// Path is requested with GET below each base URL. Default: /models.
	Path string `json:"path,omitempty"`
	// Interval is the time between two checks. Default: 30s.
	Interval caddy.Duration `json:"interval,omitempty"`
	// Timeout bounds one check. Default: 5s.
	Timeout caddy.Duration `json:"timeout,omitempty"`
}

// DeploymentConfig is one deployment of a model (a `to` line).
type DeploymentConfig struct {
	// Provider names the provider.
	Provider string `json:"provider"`
	// UpstreamModel is the model name sent to it; empty keeps the
	// client's.
	UpstreamModel string `json:"upstream_model,omitempty"`
	// Weight is its share under weighted_random. Default: 1.
	Weight int `json:"weight,omitempty"`
	// Keys are the indexes (from 0) of the provider's api_key values it
	// may use. Default: all.
	Keys []int `json:"keys,omitempty"`
	// MaxConcurrent, RPM and TPM bound the deployment's requests in
	// flight, and requests and estimated tokens per minute.
	MaxConcurrent int `json:"max_concurrent,omitempty"`
	RPM           int `json:"rpm,omitempty"`
	TPM           int `json:"tpm,omitempty"`
}

// ModelConfig maps a model id or glob to its deployments.
type ModelConfig struct {
	// Pattern is a model id or a glob such as "qwen3-*".
	Pattern string `json:"pattern"`
	// Provider is the name of the provider serving the model, when it has
	// one deployment (the `model <id> <provider>` shorthand).
	Provider string `json:"provider,omitempty"`
	// Deployments serve the model (its `to` lines), in place of Provider
	// and UpstreamModel.
	Deployments []*DeploymentConfig `json:"deployments,omitempty"`
	// Fallbacks are model ids tried in order when no deployment answers
	// before the first byte.
	Fallbacks []string `json:"fallbacks,omitempty"`
	// LBPolicy picks a deployment: weighted_random (default), round_robin,
	// least_requests or lowest_latency.
	LBPolicy string `json:"lb_policy,omitempty"`
	// UpstreamModel, if set, is the model name sent upstream.
	UpstreamModel string `json:"upstream_model,omitempty"`
	// Kind is "chat", "messages", "image" or "video". Default: "chat" for
	// openai providers, "messages" for anthropic, "image" for dashscope.
	Kind string `json:"kind,omitempty"`
	// Sizes lists the allowed "<width>x<height>" sizes of a task model.
	Sizes []string `json:"sizes,omitempty"`
	// TypicalDuration is how long the model's videos usually take; it
	// drives the progress of tasks whose upstream reports none.
	TypicalDuration caddy.Duration `json:"typical_duration,omitempty"`
}

// TasksConfig tunes the task service.
type TasksConfig struct {
	// TTL is how long tasks can be queried. Default: 24h.
	TTL caddy.Duration `json:"ttl,omitempty"`
	// MediaTTL is how long re-hosted images and videos are served.
	// Default: 24h.
	MediaTTL caddy.Duration `json:"media_ttl,omitempty"`
	// PollInterval is the base interval between two upstream polls of a
	// running video task. Default: 5s.
	PollInterval caddy.Duration `json:"poll_interval,omitempty"`
	// MaxConcurrentCreates bounds the task creates that wait on a provider
	// at once, per config: an image create until its images are stored, a
	// video create until the provider accepted the job. Beyond it, creates
	// get 503 with code server_overloaded and Retry-After, before any
	// provider is contacted. Default: 64.
	MaxConcurrentCreates int `json:"max_concurrent_creates,omitempty"`
	// Lease is how long an instance owns a task it claimed to poll: the
	// time within which no other instance (or the next run of this one)
	// polls it, and after which a task whose instance died is taken over.
	// It must exceed a poll's upstream timeout. Default: 2m.
	Lease caddy.Duration `json:"lease,omitempty"`
}

// CaddyModule returns the Caddy module information.
func (App) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "air",
		New: func() caddy.Module { return new(App) },
	}
}

// Provision sets up the app. It does not open the store: that happens in
// Start, so that `caddy validate` beside a running server does not fight
// over Badger's directory lock.
func (a *App) Provision(ctx caddy.Context) error {
	a.ctx = ctx
	a.logger = ctx.Logger()
	a.live = new(live)
	if err := a.provisionStorage(); err != nil {
		return a.configError(err)
	}
	if a.LedgerRetention == 0 {
		a.LedgerRetention = caddy.Duration(defaultLedgerRetention)
	}
	if a.MaxRequestBody == 0 {
		a.MaxRequestBody = defaultMaxRequestBody
	}
	if a.MinFreeSpace == 0 {
		a.MinFreeSpace = defaultMinFreeSpace
	}
	if a.MaxJSONDepth == 0 {
		a.MaxJSONDepth = jsonlimit.DefaultMaxDepth
	}
	if a.MaxBufferedBodies == 0 {
		a.MaxBufferedBodies = defaultMaxBufferedBodies
	}
	if a.Tasks == nil {
		a.Tasks = &TasksConfig{}
	}
	if a.Tasks.TTL == 0 {
		a.Tasks.TTL = caddy.Duration(defaultTaskTTL)
	}
	if a.Tasks.MediaTTL == 0 {
		a.Tasks.MediaTTL = a.Tasks.TTL
	}
	if a.Tasks.PollInterval == 0 {
		a.Tasks.PollInterval = caddy.Duration(defaultPollInterval)
	}
	var err error
	if a.routes, err = a.buildRoutes(); err != nil {
		return err
	}
	a.provisionHealth()
	if err := a.setupMetrics(ctx); err != nil {
		return fmt.Errorf("metrics: %v", err)
	}
	a.router = routing.New(routing.Config{Table: a.routes, Options: a.routingOptions(), Observer: a.routingObserver(),
		States: a.upstreamState, Logger: a.logger.Named("routing")})
	a.transport = &reverseproxy.HTTPTransport{Versions: []string{"1.1", "2"}}
	if err := a.transport.Provision(ctx); err != nil {
		return fmt.Errorf("provider transport: %v", err)
	}
	a.prices, err = a.loadPrices()
	return err
}

// buildRoutes turns the provider and model config into a routing table.
func (a *App) buildRoutes() (*providers.Table, error) {
	repl := caddy.NewReplacer()
	byName := make(map[string]*providers.Provider)
	provs := make([]*providers.Provider, 0, len(a.Providers))
	for _, pc := range a.Providers {
		p := &providers.Provider{
			Name:     pc.Name,
			Protocol: pc.Protocol,
			Timeout:  time.Duration(pc.Timeout),
			Retries:  defaultRetries,
		}
		if p.Timeout == 0 {
			p.Timeout = defaultProviderTimeout
		}
		if pc.TryTimeout < 0 || (pc.TryTimeout > 0 && time.Duration(pc.TryTimeout) >= p.Timeout) {
			return nil, a.configError(fmt.Errorf("provider %s: try_timeout %s must be positive and shorter than timeout %s",
				pc.Name, time.Duration(pc.TryTimeout), p.Timeout))
		}
		if pc.Retries != nil {
			p.Retries = *pc.Retries
		}
		for _, u := range pc.BaseURLs {
			v, err := expand(repl, u)
			if err != nil {
				return nil, a.configError(fmt.Errorf("provider %s: base_url: %w", pc.Name, err))
			}
			p.BaseURLs = append(p.BaseURLs, v)
		}
		for _, k := range pc.APIKeys {
			v, err := expand(repl, k)
			if err != nil {
				return nil, a.configError(fmt.Errorf("provider %s: api_key: %w", pc.Name, err))
			}
			p.APIKeys = append(p.APIKeys, v)
		}
		byName[p.Name] = p
		provs = append(provs, p)
	}
	routes := make([]*providers.Route, 0, len(a.Models))
	for _, mc := range a.Models {
		rt := &providers.Route{
			Pattern:         mc.Pattern,
			UpstreamModel:   mc.UpstreamModel,
			Kind:            mc.Kind,
			Sizes:           mc.Sizes,
			TypicalDuration: time.Duration(mc.TypicalDuration),
			Fallbacks:       mc.Fallbacks,
			Policy:          mc.LBPolicy,
		}
		if mc.Provider != "" {
			p, ok := byName[mc.Provider]
			if !ok {
				return nil, fmt.Errorf("model %q: unknown provider %q", mc.Pattern, mc.Provider)
			}
			rt.Provider = p
		}
		for _, dc := range mc.Deployments {
			p, ok := byName[dc.Provider]
			if !ok {
				return nil, fmt.Errorf("model %q: unknown provider %q", mc.Pattern, dc.Provider)
			}
			rt.Deployments = append(rt.Deployments, &providers.Deployment{Provider: p, UpstreamModel: dc.UpstreamModel,
				Keys: dc.Keys, Weight: dc.Weight, MaxConcurrent: dc.MaxConcurrent, RPM: dc.RPM, TPM: dc.TPM})
		}
		routes = append(routes, rt)
	}
	return providers.NewTable(provs, routes)
}

// expand replaces the placeholders of a provider setting. A setting that
// names an environment variable that is unset or empty, or that ends up
// empty, is an error: a provider without its key or URL would otherwise be
// called without credentials, or not at all, and only its callers would see.
func expand(repl *caddy.Replacer, s string) (string, error) {
	out, err := repl.ReplaceFunc(s, func(variable string, val any) (any, error) {
		name, ok := strings.CutPrefix(variable, "env.")
		if !ok {
			return val, nil
		}
		if v, set := os.LookupEnv(name); !set || v == "" {
			return nil, fmt.Errorf("environment variable %s is unset or empty", name)
		}
		return val, nil
	})
	if err != nil {
		return "", err
	}
	if out == "" {
		return "", fmt.Errorf("%q is empty once its placeholders are replaced", s)
	}
	return out, nil
}

// configError logs err, which fails the config load, and returns it.
func (a *App) configError(err error) error {
	a.logger.Error("invalid air configuration", zap.Error(err))
	return err
}

// Validate checks the configuration.
func (a *App) Validate() error {
	if err := a.validateStorage(); err != nil {
		return err
	}
	if a.MaxRequestBody < 0 {
		return errors.New("max_request_body must be positive")
	}
	if a.MinFreeSpace < 0 {
		return errors.New("min_free_space must be positive")
	}
	if a.MaxJSONDepth < 0 {
		return errors.New("max_json_depth must be positive")
	}
	if err := a.Responses.validate(); err != nil {
		return err
	}
	if a.Tasks != nil && a.Tasks.Lease < 0 {
		return errors.New("tasks: lease must be positive")
	}
	if a.Tasks != nil && a.Tasks.MaxConcurrentCreates < 0 {
		return errors.New("tasks: max_concurrent_creates must be positive")
	}
	if a.MaxBufferedBodies < a.MaxRequestBody {
		return fmt.Errorf("max_buffered_bodies (%d) must be at least max_request_body (%d)", a.MaxBufferedBodies, a.MaxRequestBody)
	}
	return nil
}

// Start opens (or shares, across a reload) the store and starts background
// work.
func (a *App) Start() error {
	val, _, err := statePool.LoadOrNew(a.poolKey, func() (caddy.Destructor, error) {
		return openState(a.Storage, time.Duration(a.LedgerRetention), a.MinFreeSpace, a.logger)
	})
	if err != nil {
		return err
	}
	st := val.(*state)
	st.guard.minFree.Store(a.MinFreeSpace)
	commitInterval := billing.DefaultCommitInterval
	if a.LedgerCommitInterval != nil {
		commitInterval = time.Duration(*a.LedgerCommitInterval)
	}
	st.ledger.SetCommitInterval(commitInterval)
	st.ledger.SetSyncObserver(a.commitObserver())
	rt, err := a.startRuntime(st)
	if err != nil {
		_, _ = statePool.Delete(a.poolKey)
		return err
	}
	a.live.state.Store(st)
	a.live.rt.Store(rt)
	bodies.setLimit(a.MaxBufferedBodies)
	ctx, cancel := context.WithCancel(context.Background())
	a.cancel = cancel
	a.done = make(chan struct{})
	go func() {
		defer close(a.done)
		a.runBackground(ctx, rt)
	}()
	running.Store(a)
	a.logAtStart()
	return nil
}

// Stop stops background work and releases this config's hold on the store;
// the store closes when no config uses it any more.
func (a *App) Stop() error {
	running.CompareAndSwap(a, nil)
	if a.cancel != nil {
		a.cancel()
		<-a.done
	}
	st := a.live.state.Load()
	if st == nil || a.live.stopped.Swap(true) {
		return nil
	}
	// Records of requests that finished under this config are written
	// before the config lets go of the store, within a bound: a storage
	// that hangs must not hang a reload or the exit.
	ctx, cancel := context.WithTimeout(context.Background(), stopFlushTimeout)
	if err := st.ledger.Flush(ctx); err != nil {
		a.logger.Error("ledger records still queued when the config stopped; they are written when the storage takes them",
			zap.Int("records", st.ledger.Queued()), zap.Error(err))
	}
	cancel()
	// The state and runtime stay in place: Caddy stops a config's apps in
	// no set order, and the HTTP servers of this config may still take
	// requests on open connections after this app stopped. During a reload
	// the next config holds the pooled state and those requests are served
	// as usual; once the last config lets go, the state closes and they
	// are refused (see current and runtimeState).
	_, err := statePool.Delete(a.poolKey)
	return err
}

// Cleanup releases the provider transport and the app's references to
// the kept upstream states.
func (a *App) Cleanup() error {
	a.releaseStates()
	if a.transport != nil {
		return a.transport.Cleanup()
	}
	return nil
}

// current returns the started app's state, or nil before Start and once
// the state is closed.
func (a *App) current() *state {
	st := a.live.state.Load()
	if st == nil || st.closed.Load() {
		return nil
	}
	return st
}

// routingOptions are the routing options of each provider.
func (a *App) routingOptions() map[string]routing.Options {
	out := make(map[string]routing.Options, len(a.Providers))
	for _, pc := range a.Providers {
		o := routing.Options{FailureRate: pc.FailureRate, MinRequests: int64(pc.MinRequests), FailWindow: time.Duration(pc.FailWindow),
			FailDuration: time.Duration(pc.FailDuration), Cooldown: time.Duration(pc.Cooldown), KeyCooldown: time.Duration(pc.KeyCooldown),
			MaxConcurrent: pc.MaxConcurrent, RPM: pc.RPM, TPM: pc.TPM, TryTimeout: time.Duration(pc.TryTimeout)}
		if hc := pc.HealthCheck; hc != nil {
			o.HealthCheck = &routing.HealthCheck{Path: hc.Path, Interval: time.Duration(hc.Interval), Timeout: time.Duration(hc.Timeout)}
		}
		out[pc.Name] = o
	}
	return out
}

// Router returns the router that picks every attempt's upstream.
func (a *App) Router() *routing.Router { return a.router }

// Routes returns the provider routing table.
func (a *App) Routes() *providers.Table { return a.routes }

// Transport returns the round tripper used to reach providers.
func (a *App) Transport() http.RoundTripper { return a.transport.Transport }

// Interface guards.
var (
	_ caddy.App          = (*App)(nil)
	_ caddy.Provisioner  = (*App)(nil)
	_ caddy.Validator    = (*App)(nil)
	_ caddy.CleanerUpper = (*App)(nil)
)
