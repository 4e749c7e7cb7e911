package caddymodule

import (
	"io/fs"
	"net/http"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/caddy-air/caddy-air/airmetrics"
	"github.com/caddy-air/caddy-air/apierror"
	"github.com/caddy-air/caddy-air/gateway"
)

// MetricsConfig configures caddy-air's Prometheus metrics, which appear
// wherever Caddy's do (the admin API's /metrics, the metrics directive).
type MetricsConfig struct {
	// Off disables caddy-air's metrics: nothing is registered or recorded.
	Off bool `json:"off,omitempty"`
	// PerUser adds metrics labelled by user and API key id
	// (air_user_*). Their series grow with the number of users and keys,
	// so they are off by default.
	PerUser bool `json:"per_user,omitempty"`
}

// processMetrics returns the collectors of the process. Caddy gives every
// config load a new registry; the collectors are registered in each, so
// counters go on across reloads.
var processMetrics = sync.OnceValue(func() *airmetrics.Metrics {
	m := airmetrics.New()
	m.SetStateSource(metricsState)
	return m
})

// setupMetrics registers the collectors in ctx's registry and binds them to
// the app's models and providers; a.metrics stays nil when they are off.
func (a *App) setupMetrics(ctx caddy.Context) error {
	a.metrics = nil
	if a.Metrics != nil && a.Metrics.Off {
		return nil
	}
	perUser := a.Metrics != nil && a.Metrics.PerUser
	m := processMetrics()
	if err := m.Register(ctx.GetMetricsRegistry(), perUser); err != nil {
		return err
	}
	c := airmetrics.Config{PerUser: perUser}
	for _, p := range a.Providers {
		c.Providers = append(c.Providers, p.Name)
	}
	for _, r := range a.routes.Routes() {
		c.Models = append(c.Models, airmetrics.Model{
			Pattern: r.Pattern, Provider: r.Provider.Name, ResponseModel: r.UpstreamModel, Operation: r.Kind,
		})
	}
	a.metrics = m.Bind(c)
	return nil
}

// commitObserver returns what the ledger tells of each batch commit, nil
// when metrics are off.
func (a *App) commitObserver() func(time.Duration) {
	if a.metrics == nil {
		return nil
	}
	m := a.metrics.Metrics()
	return func(d time.Duration) { m.ObserveCommit(d.Seconds()) }
}

// metricsRoute returns the metrics of the configured model that serves
// model, or nil (metrics off, or the model is not configured).
func (a *App) metricsRoute(model string) *airmetrics.Route {
	if a.metrics == nil {
		return nil
	}
	route, err := a.routes.Lookup(model)
	if err != nil {
		return nil
	}
	return a.metrics.Route(route.Pattern)
}

// observeRefusal records r, refused with err, in the metrics (on its
// model's route when known) and in the refusals log; endpoint is the
// ledger endpoint name or the request's path (airmetrics.Endpoint).
func (a *App) observeRefusal(w http.ResponseWriter, r *http.Request, mr *airmetrics.Route, endpoint string, err error) {
	e := asAPIError(err)
	code := ""
	if e.Code != nil {
		code = *e.Code
	}
	recordRefusal(w, r, mr, endpoint, e.Status, code, e.Message)
	if a == nil || a.metrics == nil {
		return
	}
	reason := refusalReason(e)
	if mr != nil {
		mr.Reject(endpoint, e.Status, reason)
		return
	}
	a.metrics.Reject(endpoint, e.Status, reason)
}

// countRead counts a read (a request that asks no model for work: the
// models list or a model, a task or the task list, a stored response)
// that was answered with status, under mr's model (nil: unknown).
func (a *App) countRead(r *http.Request, mr *airmetrics.Route, outcome string, status int) {
	if a == nil || a.metrics == nil {
		return
	}
	a.metrics.Count(mr, r.URL.Path, outcome, status)
}

// refuseRead answers a read the gateway refuses by itself with err, as
// respondError does, and counts it as a refusal (metrics and the
// refusals log), under mr's model when known.
func (a *App) refuseRead(w http.ResponseWriter, r *http.Request, mr *airmetrics.Route, err error) error {
	a.observeRefusal(w, r, mr, r.URL.Path, err)
	return respondError(w, r, err)
}

// refusalReason classifies an error the gateway answered by itself.
func refusalReason(e *apierror.Error) string {
	switch {
	case e.Status == http.StatusUnauthorized:
		return airmetrics.ReasonAuth
	case e.Status == http.StatusForbidden:
		return airmetrics.ReasonForbidden
	case e.Type == apierror.TypeInsufficient, e.Code != nil && *e.Code == "budget_currency_unconvertible":
		return airmetrics.ReasonBudget
	case e.Type == apierror.TypeRateLimit:
		return airmetrics.ReasonRateLimit
	case e.Code != nil && *e.Code == "storage_full":
		return airmetrics.ReasonStorageFull
	case e.Status >= 500:
		return airmetrics.ReasonUnavailable
	}
	return airmetrics.ReasonInvalidRequest
}

// metricsOutcome, sinceStart and durationMillis are the exchange
// pipeline's (gateway), for the handlers outside it.
var (
	metricsOutcome = gateway.MetricsOutcome
	sinceStart     = gateway.SinceStart
	durationMillis = gateway.DurationMillis
)

// storeSizeCacheTTL is how long a measure of the storage directory's size
// is reused: walking it on every scrape would cost a file system walk per
// scrape.
const storeSizeCacheTTL = 10 * time.Second

// storeSize caches the size of the storage directory.
var storeSize struct {
	mu    sync.Mutex
	dir   string
	at    time.Time
	bytes int64
}

// metricsState reads the scrape-time gauges from the running app's state.
func metricsState() (airmetrics.State, bool) {
	app := running.Load()
	if app == nil {
		return airmetrics.State{}, false
	}
	st := app.current()
	if st == nil {
		return airmetrics.State{}, false
	}
	st.guard.refresh()
	var dropped, failed int64
	if st.reqlogs != nil {
		dropped, failed = st.reqlogs.Dropped(), st.reqlogs.Failed()
	}
	return airmetrics.State{
		RequestLogsDropped: dropped, RequestLogsFailed: failed,
		LedgerQueued:     st.ledger.Queued(),
		LedgerLagSeconds: st.ledger.Lag().Seconds(),
		LedgerUnreadable: len(st.ledger.Damaged()),
		StoreBytes:       dirSize(st.guard.dir),
		FreeBytes:        st.guard.free.Load(),
		MarginBytes:      st.guard.margin.Load(),
	}, true
}

// dirSize is the space dir takes on disk (allocated blocks), measured at
// most every storeSizeCacheTTL.
func dirSize(dir string) int64 {
	storeSize.mu.Lock()
	defer storeSize.mu.Unlock()
	if storeSize.dir == dir && time.Since(storeSize.at) < storeSizeCacheTTL {
		return storeSize.bytes
	}
	var total int64
	_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // a file removed meanwhile
		}
		fi, err := d.Info()
		if err != nil {
			return nil
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			total += st.Blocks * 512
		} else {
			total += fi.Size()
		}
		return nil
	})
	storeSize.dir, storeSize.at, storeSize.bytes = dir, time.Now(), total
	return total
}
