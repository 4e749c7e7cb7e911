package caddymodule

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"time"

	"go.uber.org/zap"

	"github.com/caddy-air/caddy-air/batches"
	"github.com/caddy-air/caddy-air/billing"
	"github.com/caddy-air/caddy-air/reqlog"
	"github.com/caddy-air/caddy-air/responses"
	"github.com/caddy-air/caddy-air/tasks"
	"github.com/caddy-air/caddy-air/upstream"
)

// runtime holds the services of one started config: they combine the
// config's settings (prices, routes) with the pooled state.
type runtime struct {
	billing *billing.Engine
	tasks   *tasks.Service
	// batches serves files and batches, and polls and bills batches.
	batches *batches.Service
	// responses polls and bills background responses, for retrievals
	// too (responses.Poller.Settle); nil without a responses store.
	responses *responses.Poller
}

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

// startRuntime builds the per-config services on st.
func (a *App) startRuntime(st *state) (*runtime, error) {
	engine := billing.NewEngine(a.prices, st.ledger, st.budgets)
	svc, err := tasks.New(tasks.Config{
		Store:                st.repos.Tasks,
		Media:                st.repos.Media,
		Routes:               a.routes,
		Client:               &http.Client{Transport: a.transport.Transport},
		Biller:               ledgerBiller{engine: engine, app: a},
		TTL:                  time.Duration(a.Tasks.TTL),
		MediaTTL:             time.Duration(a.Tasks.MediaTTL),
		PollInterval:         time.Duration(a.Tasks.PollInterval),
		MaxConcurrentCreates: a.Tasks.MaxConcurrentCreates,
		MediaFetchAllow:      a.Tasks.MediaFetchAllow,
		Lease:                time.Duration(a.Tasks.Lease),
		MaxJSONDepth:         a.MaxJSONDepth,
		Logger:               a.logger.Named("tasks"),
		Health:               a.tracker,
		Observer:             a.taskObserver(),
		Router:               a.router,
		Attempts:             a.taskAttempts(),
		Holds:                st.taskHolds,
		Buffers:              bodies,
	})
	if err != nil {
		return nil, err
	}
	rb := ledgerBiller{engine: engine, app: a}
	var poller *responses.Poller
	if st.repos.Responses != nil {
		pc := a.Responses.pollerConfig()
		pc.Store, pc.Routes, pc.Biller = st.repos.Responses, a.routes, rb
		pc.Transport = a.transport.Transport
		pc.Logger = a.logger.Named("responses")
		pc.Holds = st.responseHolds
		if b := a.reqlogs; b != nil {
			pc.Logged = func(ref responses.Ref, body []byte) {
				c := reqlog.NewCapture(b.cap) // the body cap, as for other logs
				_, _ = c.Write(body)
				backgroundLogged(st, b, ref, c.Bytes(), c.Truncated)
			}
		}
		if poller, err = responses.NewPoller(pc); err != nil {
			return nil, err
		}
	}
	bc := a.Batches.serviceConfig()
	bc.Files, bc.Batches, bc.Media, bc.Routes, bc.Biller = st.repos.Files, st.repos.Batches, st.repos.Media, a.routes, rb
	bc.Transport, bc.Router = a.transport.Transport, a.router
	bc.Holds, bc.MaxJSONDepth, bc.Logger = st.batchHolds, a.MaxJSONDepth, a.logger.Named("batches")
	bsvc, err := batches.New(bc)
	if err != nil {
		return nil, err
	}
	st.interrupted.Do(func() {
		n, err := engine.SettleInterrupted(context.Background())
		if err != nil {
			a.logger.Error("recording the requests the last stop interrupted", zap.Error(err))
		} else if n > 0 {
			a.logger.Warn("recorded requests that the last stop interrupted (outcome interrupted, usage estimated, no cost)", zap.Int("records", n))
		}
	})
	return &runtime{billing: engine, tasks: svc, responses: poller, batches: bsvc}, nil
}

// runBackground runs the task poller, the background-response poller and
// the alerts until ctx is done. The pollers resume the running tasks and
// pending responses of the store, so both survive reloads and restarts.
func (a *App) runBackground(ctx context.Context, rt *runtime) {
	if a.storage.Shared() {
		go a.settleTakenOver(ctx, rt)
	}
	go a.router.RunHealthChecks(ctx, upstream.Prober(a.Transport()))
	alerting := make(chan struct{})
	go func() {
		defer close(alerting)
		a.runAlerts(ctx, a.live.state.Load())
	}()
	defer func() { <-alerting }()
	if rt.responses != nil {
		go rt.responses.Run(ctx)
	}
	go rt.batches.Run(ctx)
	rt.tasks.Run(ctx)
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
func (a *App) settleTakenOver(ctx context.Context, rt *runtime) {
	t := time.NewTicker(settleInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		n, err := rt.billing.SettleInterrupted(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			a.logger.Error("recording the requests that stopped instances interrupted", zap.Error(err))
		case n > 0:
			a.logger.Warn("recorded requests that stopped instances interrupted (outcome interrupted, usage estimated, no cost)", zap.Int("records", n))
		}
	}
}

// runtimeState returns the started runtime, or nil before Start and once
// its state is closed.
func (a *App) runtimeState() *runtime {
	if a.current() == nil {
		return nil
	}
	return a.live.rt.Load()
}

// taskObserver is what the task service reports to, nil when metrics are
// off.
func (a *App) taskObserver() tasks.Observer {
	if a.metrics == nil {
		return nil
	}
	return a.metrics
}

// ledgerBiller charges what finished without a hold (or whose hold was
// lost to a reload or an earlier attempt) to the ledger, idempotently by
// record id: succeeded tasks, finished background responses and the
// lines of finished batches. Charged without its reservation, a record
// counts in its user's team of now; its tags are not kept.
type ledgerBiller struct {
	engine *billing.Engine
	app    *App
}

// Charge implements responses.Biller.
func (b ledgerBiller) Charge(ctx context.Context, rec billing.Record) error {
	if st := b.app.current(); st != nil && rec.Team == "" {
		if t := st.teams.Of(rec.User); t != nil {
			rec.Team = t.Name
		}
	}
	rec, fresh, err := b.engine.Charge(ctx, rec)
	if err == nil && fresh {
		b.app.countCharge(rec)
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

// taskAttempts is what the task service reports submission attempts to,
// nil when metrics are off.
func (a *App) taskAttempts() upstream.Observer {
	if a.metrics == nil {
		return nil
	}
	return a.metrics
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
