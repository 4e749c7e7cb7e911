package gateway

import (
	"context"
	"net/http"
	"time"

	"go.uber.org/zap"

	"github.com/caddy-air/caddy-air/airmetrics"
	"github.com/caddy-air/caddy-air/alerts"
	"github.com/caddy-air/caddy-air/batches"
	"github.com/caddy-air/caddy-air/billing"
	"github.com/caddy-air/caddy-air/health"
	"github.com/caddy-air/caddy-air/providers"
	"github.com/caddy-air/caddy-air/reqlog"
	"github.com/caddy-air/caddy-air/responses"
	"github.com/caddy-air/caddy-air/routing"
	"github.com/caddy-air/caddy-air/tasks"
	"github.com/caddy-air/caddy-air/upstream"
)

// Config is what one config provisions for its services, before it
// starts: its settings made ready for use. It is fixed once provisioned.
type Config struct {
	// Prices prices every charge made under the config.
	Prices *billing.PriceTable
	// Routes maps models to providers.
	Routes *providers.Table
	// Router picks the upstream of every attempt.
	Router *routing.Router
	// Tracker counts each provider's upstream attempts, for health.
	Tracker *health.Tracker
	// Transport reaches the providers.
	Transport http.RoundTripper
	// Metrics observes requests, attempts and charges; nil when metrics
	// are off.
	Metrics *airmetrics.Observer
	// Alerts queues and delivers the config's alerts; nil for none.
	Alerts *alerts.Dispatcher
	// AlertInterval is how often budgets, the ledger and key expiries are
	// checked for alerts.
	AlertInterval time.Duration
	// KeyExpiryLead is how long before a key expires its key_expiring
	// alert is raised.
	KeyExpiryLead time.Duration
	// Probe tests that the store takes writes, for health and alerts.
	Probe *Probe
	// RequestLogs are the request logs' bounds.
	RequestLogs *RequestLogBounds
	// TaskConfig is the config's settings of the task service;
	// NewServices fills in its stores, routes, client, biller, holds and
	// observers.
	TaskConfig tasks.Config
	// PollerConfig is the config's settings of the background-response
	// poller; NewServices fills in its store, routes, transport, biller and
	// holds.
	PollerConfig responses.Config
	// BatchConfig is the config's settings of the batch service;
	// NewServices fills in its stores, routes, transport, router, biller and
	// holds.
	BatchConfig batches.Config
	// Several instances share the backend: the requests that dead ones
	// left interrupted are recorded while the services run.
	Several bool
	// Logger logs the services' events; nil for none.
	Logger *zap.Logger
}

// RequestLogBounds are a config's request-log bounds, ready for use.
type RequestLogBounds struct {
	// Cap is the most bytes kept of each body.
	Cap int
	// TTL is how long a log is kept.
	TTL time.Duration
	// Redactor redacts both bodies.
	Redactor *reqlog.Redactor
}

// Services are one started config's services: its Config combined with
// the Shared it started on.
type Services struct {
	Config
	// Billing admits, prices and records every exchange of the config.
	Billing *billing.Engine
	// Tasks serves, polls and bills image and video tasks.
	Tasks *tasks.Service
	// Batches serves files and batches, and polls and bills batches.
	Batches *batches.Service
	// Responses polls and bills background responses, for retrievals
	// too (responses.Poller.Settle); nil without a responses store.
	Responses *responses.Poller

	shared *Shared
	cancel context.CancelFunc
	done   chan struct{}
}

// NewServices builds c's services on sh. The first services built on a
// Shared record, once, the requests that the last stop of its storage
// interrupted.
func NewServices(sh *Shared, c Config) (*Services, error) {
	if c.Logger == nil {
		c.Logger = zap.NewNop()
	}
	s := &Services{Config: c, shared: sh}
	s.Billing = billing.NewEngine(c.Prices, sh.Ledger, sh.Budgets)
	rb := ledgerBiller{s: s}
	tc := c.TaskConfig
	tc.Store, tc.Media, tc.Routes = sh.Repos.Tasks, sh.Repos.Media, c.Routes
	tc.Client, tc.Biller = &http.Client{Transport: c.Transport}, rb
	tc.Health, tc.Router, tc.Holds = c.Tracker, c.Router, sh.TaskHolds
	if c.Metrics != nil {
		tc.Observer, tc.Attempts = c.Metrics, c.Metrics
	}
	tc.Logger = c.Logger.Named("tasks")
	var err error
	if s.Tasks, err = tasks.New(tc); err != nil {
		return nil, err
	}
	if sh.Repos.Responses != nil {
		pc := c.PollerConfig
		pc.Store, pc.Routes, pc.Biller = sh.Repos.Responses, c.Routes, rb
		pc.Transport = c.Transport
		pc.Logger = c.Logger.Named("responses")
		pc.Holds = sh.ResponseHolds
		if b := c.RequestLogs; b != nil {
			pc.Logged = func(ref responses.Ref, body []byte) {
				cp := reqlog.NewCapture(b.Cap) // the body cap, as for other logs
				_, _ = cp.Write(body)
				BackgroundLogged(sh, b, ref, cp.Bytes(), cp.Truncated)
			}
		}
		if s.Responses, err = responses.NewPoller(pc); err != nil {
			return nil, err
		}
	}
	bc := c.BatchConfig
	bc.Files, bc.Batches, bc.Media, bc.Routes, bc.Biller = sh.Repos.Files, sh.Repos.Batches, sh.Repos.Media, c.Routes, rb
	bc.Transport, bc.Router = c.Transport, c.Router
	bc.Holds, bc.Logger = sh.BatchHolds, c.Logger.Named("batches")
	if s.Batches, err = batches.New(bc); err != nil {
		return nil, err
	}
	sh.interrupted.Do(func() {
		n, err := s.Billing.SettleInterrupted(context.Background())
		if err != nil {
			c.Logger.Error("recording the requests the last stop interrupted", zap.Error(err))
		} else if n > 0 {
			c.Logger.Warn("recorded requests that the last stop interrupted (outcome interrupted, usage estimated, no cost)", zap.Int("records", n))
		}
	})
	return s, nil
}

// Shared returns the Shared that s started on.
func (s *Services) Shared() *Shared { return s.shared }

// Start starts the background work of s: the task poller, the
// background-response poller, the batch poller, the health checks and
// the alerts, until Stop. The pollers resume the running tasks
// and pending responses of the store, so both survive reloads and
// restarts.
func (s *Services) Start() {
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	s.done = make(chan struct{})
	go func() {
		defer close(s.done)
		s.run(ctx)
	}()
}

// Stop ends the background work that Start began and waits for it; it
// does nothing when s did not start.
func (s *Services) Stop() {
	if s.cancel == nil {
		return
	}
	s.cancel()
	<-s.done
}

// run runs the background work until ctx is done.
func (s *Services) run(ctx context.Context) {
	if s.Several {
		go s.settleTakenOver(ctx)
	}
	if s.Router != nil {
		go s.Router.RunHealthChecks(ctx, upstream.Prober(s.Transport))
	}
	if s.Alerts != nil {
		alerting := make(chan struct{})
		go func() {
			defer close(alerting)
			s.runAlerts(ctx, s.shared)
		}()
		defer func() { <-alerting }()
	}
	if s.Responses != nil {
		go s.Responses.Run(ctx)
	}
	go s.Batches.Run(ctx)
	s.Tasks.Run(ctx)
}

// settleInterval is how often an instance on a shared backend records the
// requests that other, dead instances left interrupted: a third of the
// instance lease (15 s), as often as each instance renews its own. A dead
// instance's lease expires 10 to 15 s after its last heartbeat, so its
// in-flight requests are recorded interrupted at most 20 s after its
// death (measured: 14.7–19.5 s, bench/README.md; every 15 s, it was up to
// 30 s, 29.5 s measured, as all instances that start together tick
// together). The check is one statement on tables that hold only the
// live instances and the requests in flight.
const settleInterval = 5 * time.Second

// settleTakenOver records, until ctx is done, the interrupted requests of
// instances that died while this one runs (the first call at start only
// sees those whose lease had already expired).
func (s *Services) settleTakenOver(ctx context.Context) {
	t := time.NewTicker(settleInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		n, err := s.Billing.SettleInterrupted(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			s.Logger.Error("recording the requests that stopped instances interrupted", zap.Error(err))
		case n > 0:
			s.Logger.Warn("recorded requests that stopped instances interrupted (outcome interrupted, usage estimated, no cost)", zap.Int("records", n))
		}
	}
}

// MetricsRoute returns the metrics of the configured model that serves
// model, or nil (metrics off, or the model is not configured).
func (c *Config) MetricsRoute(model string) *airmetrics.Route {
	if c.Metrics == nil {
		return nil
	}
	route, err := c.Routes.Lookup(model)
	if err != nil {
		return nil
	}
	return c.Metrics.Route(route.Pattern)
}

// CountCharge counts rec, freshly charged, in its model's metrics.
func (c *Config) CountCharge(rec billing.Record) {
	route := c.MetricsRoute(rec.Model)
	route.Charge(rec.Currency, int64(rec.Cost), rec.User, rec.KeyID)
	route.Unpriced(rec.Unpriced)
}

// ledgerBiller charges what finished without a hold (or whose hold was
// lost to a reload or an earlier attempt) to the ledger, idempotently by
// record id: succeeded tasks, finished background responses and the
// lines of finished batches. Charged without its reservation, a record
// counts in its user's team of now; its tags are not kept.
type ledgerBiller struct{ s *Services }

// Charge implements responses.Biller.
func (b ledgerBiller) Charge(ctx context.Context, rec billing.Record) error {
	if sh := b.s.shared; !sh.Closed() && rec.Team == "" {
		if t := sh.Teams.Of(rec.User); t != nil {
			rec.Team = t.Name
		}
	}
	rec, fresh, err := b.s.Billing.Charge(ctx, rec)
	if err == nil && fresh {
		b.s.CountCharge(rec)
	}
	return err
}

// ChargeTask implements tasks.Biller.
func (b ledgerBiller) ChargeTask(ctx context.Context, c tasks.Charge) error {
	return b.Charge(ctx, c.Record())
}

// Interface guards.
var (
	_ tasks.Biller     = ledgerBiller{}
	_ responses.Biller = ledgerBiller{}
)
