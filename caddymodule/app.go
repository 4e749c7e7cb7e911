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
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp/reverseproxy"
	"go.uber.org/zap"

	"github.com/caddy-air/caddy-air/billing"
	"github.com/caddy-air/caddy-air/caddymodule/airmod"
	"github.com/caddy-air/caddy-air/gateway"
	"github.com/caddy-air/caddy-air/jsonlimit"
	"github.com/caddy-air/caddy-air/providers"
	"github.com/caddy-air/caddy-air/reqbody"
	"github.com/caddy-air/caddy-air/routing"
	"github.com/caddy-air/caddy-air/tasks"
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
	ledgerWait = gateway.LedgerWait
	// defaultMinFreeSpace is the free space, beyond the store's own
	// reserve and what its sparse files may still claim, below which new
	// billable work is refused.
	defaultMinFreeSpace = 64 << 20
)

// App is the `air` app: it provisions a config's services
// (gateway.Config), opens or shares the store across reloads
// (gateway.Shared, in statePool) and starts the services on it
// (gateway.Services), which caddy-air's handlers read through
// gateway.Live. Configure it with the global Caddyfile option `air { … }`.
type App struct {
	// StorageRaw selects where state is kept: a storage backend module
	// (namespace air.storage) named by its "backend", such as
	// {"backend": "postgres", "dsn": "{env.AIR_PG_DSN}"}. Default: Badger
	// in the "air" folder of Caddy's data directory.
	StorageRaw json.RawMessage `json:"storage,omitempty" caddy:"namespace=air.storage inline_key=backend"`
	// Prices is the path of the JSON price file. Without one, every model is
	// served unpriced.
	Prices string `json:"prices,omitempty"`
	// LedgerRetention is how long ledger records are kept. Default: 90 days.
	LedgerRetention caddy.Duration `json:"ledger_retention,omitempty"`
	// LedgerDurability is how durable a request's ledger record is before
	// the end of its answer is sent: "journaled" (default) waits until
	// the record is written to the journal (Badger) or committed with
	// synchronous_commit off (PostgreSQL), which survives any death of the
	// gateway's process, and syncs in the background; "strict" waits for
	// the sync (fdatasync, or a synchronous commit), which survives a
	// crash of the machine too, at the cost of up to a commit interval
	// more before each answer's end.
	LedgerDurability string `json:"ledger_durability,omitempty"`
	// LedgerCommitInterval is the least time between two syncs of the
	// ledger's journal (synchronous commits on PostgreSQL): the records
	// written meanwhile share the next sync. In strict durability the
	// responses' last bytes wait for it. Zero syncs every group of
	// records at once (more CPU, less latency in strict mode). Default:
	// 25ms.
	LedgerCommitInterval *caddy.Duration `json:"ledger_commit_interval,omitempty"`
	// MaxRequestBody is the largest request body accepted, in bytes.
	// Default: 16 MiB. Larger bodies get 413.
	MaxRequestBody int64 `json:"max_request_body,omitempty"`
	// MinFreeSpace is the free space, in bytes, that the storage's file
	// system must keep beyond the store's own reserve (below which the
	// store refuses every write); below it new billable requests get 507
	// storage_full before they reach an upstream. Default: 64 MiB.
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
	// Batches tunes the files and batches service (air_batches).
	Batches *BatchesConfig `json:"batches,omitempty"`
	// Responses tunes the poller that bills background responses.
	Responses *ResponsesConfig `json:"responses,omitempty"`
	// Health tunes the health checks.
	Health *HealthConfig `json:"health,omitempty"`
	// Metrics configures the Prometheus metrics. Default: on, without
	// per-user labels.
	Metrics *MetricsConfig `json:"metrics,omitempty"`
	// Alerts configures the alerts and the webhooks that receive them.
	Alerts *AlertsConfig `json:"alerts,omitempty"`
	// RequestLogs bounds the request logs of the keys and teams that have
	// them on: size cap, retention, redacted patterns.
	RequestLogs *RequestLogsConfig `json:"request_logs,omitempty"`

	ctx    caddy.Context
	logger *zap.Logger
	// cfg is what Provision makes ready of the config for its services.
	cfg gateway.Config
	// transport is the provider transport of cfg.Transport, cleaned up
	// with the app.
	transport *reverseproxy.HTTPTransport
	poolKey   string
	// storage is the loaded storage backend.
	storage airmod.Storage
	// priceText is the price file as loaded, for the console.
	priceText string
	// live is what the started config serves with.
	live *gateway.Live
	// stateRefs are the identities of the upstream states the router
	// took from upstreamStates, given back on Cleanup.
	stateRefs []string
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
	a.live = new(gateway.Live)
	if err := a.checkConfig(); err != nil {
		return a.configError(err)
	}
	rb, rerr := a.RequestLogs.bounds()
	if rerr != nil {
		return a.configError(rerr)
	}
	a.cfg.RequestLogs = rb
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
		a.MaxBufferedBodies = reqbody.DefaultMaxBuffered
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
	if a.cfg.Routes, err = a.buildRoutes(); err != nil {
		return err
	}
	a.provisionHealth()
	if err := a.setupMetrics(ctx); err != nil {
		return fmt.Errorf("metrics: %v", err)
	}
	if err := a.provisionAlerts(ctx); err != nil {
		return a.configError(err)
	}
	a.cfg.Router = routing.New(routing.Config{Table: a.cfg.Routes, Options: a.routingOptions(), Observer: a.routingObserver(),
		States: a.upstreamState, Logger: a.logger.Named("routing")})
	a.transport = &reverseproxy.HTTPTransport{Versions: []string{"1.1", "2"}, MaxResponseHeaderSize: maxUpstreamHeader}
	if err := a.transport.Provision(ctx); err != nil {
		return fmt.Errorf("provider transport: %v", err)
	}
	a.cfg.Transport = a.transport.Transport
	a.cfg.TaskConfig = tasks.Config{
		TTL:                  time.Duration(a.Tasks.TTL),
		MediaTTL:             time.Duration(a.Tasks.MediaTTL),
		PollInterval:         time.Duration(a.Tasks.PollInterval),
		MaxConcurrentCreates: a.Tasks.MaxConcurrentCreates,
		MediaFetchAllow:      a.Tasks.MediaFetchAllow,
		Lease:                time.Duration(a.Tasks.Lease),
		MaxJSONDepth:         a.MaxJSONDepth,
		Buffers:              reqbody.Global(),
	}
	a.cfg.PollerConfig = a.Responses.pollerConfig()
	a.cfg.BatchConfig = a.Batches.serviceConfig()
	a.cfg.BatchConfig.MaxJSONDepth = a.MaxJSONDepth
	a.cfg.Several = a.storage.Shared()
	a.cfg.Logger = a.logger
	a.cfg.Prices, err = a.loadPrices()
	return err
}

// maxUpstreamHeader bounds the response headers the gateway takes from a
// provider (Go's default is 10 MiB): real providers send a few KiB, and
// headers the gateway passes on must not be more than clients read (the
// Node.js SDKs refuse over 16 KiB). An answer with more fails like a
// connection that broke: it is retried, then answered 503.
const maxUpstreamHeader = 64 << 10

// configError logs err, which fails the config load, and returns it.
func (a *App) configError(err error) error {
	a.logger.Error("invalid air configuration", zap.Error(err))
	return err
}

// Start opens (or shares, across a reload) the store and starts background
// work.
func (a *App) Start() error {
	val, _, err := statePool.LoadOrNew(a.poolKey, func() (caddy.Destructor, error) {
		if st := gateway.Resume(a.poolKey); st != nil {
			// The last config's requests still run on it: share it.
			return st, nil
		}
		return openState(a.storage, a.poolKey, time.Duration(a.LedgerRetention), a.MinFreeSpace, a.logger)
	})
	if err != nil {
		return err
	}
	st := val.(*gateway.Shared)
	st.Guard.SetMinFree(a.MinFreeSpace)
	a.applyDurability(st)
	st.Ledger.SetSyncObserver(a.commitObserver())
	svc, err := gateway.NewServices(st, a.cfg)
	if err != nil {
		_, _ = statePool.Delete(a.poolKey)
		return err
	}
	a.live.Set(svc)
	reqbody.SetLimit(a.MaxBufferedBodies)
	svc.Start()
	running.Store(a)
	a.auditConfig(st)
	a.retainBreakers()
	a.logAtStart()
	return nil
}

// Stop stops background work and releases this config's hold on the store;
// the store closes when no config uses it any more.
func (a *App) Stop() error {
	running.CompareAndSwap(a, nil)
	svc, first := a.live.Stop()
	if svc == nil {
		return nil
	}
	svc.Stop()
	if !first {
		return nil
	}
	st := svc.Shared()
	// Records of requests that finished under this config are written
	// before the config lets go of the store, within a bound: a storage
	// that hangs must not hang a reload or the exit.
	ctx, cancel := context.WithTimeout(context.Background(), stopFlushTimeout)
	if err := st.Ledger.Flush(ctx); err != nil {
		a.logger.Error("ledger records still queued when the config stopped; they are written when the storage takes them",
			zap.Int("records", st.Ledger.Queued()), zap.Error(err))
	}
	cancel()
	// The Shared and Services stay in place: Caddy stops a config's apps
	// in no set order, and the HTTP servers of this config may still take
	// requests on open connections after this app stopped. During a reload
	// the next config holds the pooled Shared and those requests are
	// served as usual; once the last config lets go, the Shared closes and
	// they are refused (see gateway.Live).
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

// Router returns the router that picks every attempt's upstream.
func (a *App) Router() *routing.Router { return a.cfg.Router }

// Routes returns the provider routing table.
func (a *App) Routes() *providers.Table { return a.cfg.Routes }

// Transport returns the round tripper used to reach providers.
func (a *App) Transport() http.RoundTripper { return a.cfg.Transport }

// loadPrices reads the price file at config load, so that a malformed one
// fails the load (and a reload keeps the old config). The file's text is
// kept for the console's operators' page.
func (a *App) loadPrices() (*billing.PriceTable, error) {
	if a.Prices == "" {
		return billing.ParsePrices("(no price file)", []byte(`{"models":{}}`))
	}
	data, err := os.ReadFile(a.Prices)
	if err != nil {
		return nil, fmt.Errorf("loading prices: reading price file: %w", err)
	}
	pt, err := billing.ParsePrices(a.Prices, data)
	if err != nil {
		return nil, fmt.Errorf("loading prices: %w", err)
	}
	a.priceText = string(data)
	return pt, nil
}

// logAtStart reports what a config starts with.
func (a *App) logAtStart() {
	a.logger.Info("air app started",
		zap.String("storage", storageName(a.storage)),
		zap.String("dir", a.storage.Directory()),
		zap.Int("providers", len(a.Providers)),
		zap.Int("models", len(a.Models)),
		zap.Bool("priced", a.Prices != ""))
}

// Interface guards.
var (
	_ caddy.App          = (*App)(nil)
	_ caddy.Provisioner  = (*App)(nil)
	_ caddy.Validator    = (*App)(nil)
	_ caddy.CleanerUpper = (*App)(nil)
)
