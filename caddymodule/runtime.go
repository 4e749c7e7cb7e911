package caddymodule

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"go.uber.org/zap"

	"github.com/caddy-air/caddy-air/billing"
	"github.com/caddy-air/caddy-air/tasks"
)

// runtime holds the services of one started config: they combine the
// config's settings (prices, routes) with the pooled state.
type runtime struct {
	billing *billing.Engine
	tasks   *tasks.Service
}

// loadPrices reads the price file at config load, so that a malformed one
// fails the load (and a reload keeps the old config).
func (a *App) loadPrices() (*billing.PriceTable, error) {
	if a.Prices == "" {
		return billing.ParsePrices("(no price file)", []byte(`{"models":{}}`))
	}
	pt, err := billing.LoadPrices(a.Prices)
	if err != nil {
		return nil, fmt.Errorf("loading prices: %w", err)
	}
	return pt, nil
}

// startRuntime builds the per-config services on st.
func (a *App) startRuntime(st *state) (*runtime, error) {
	engine := billing.NewEngine(a.prices, st.ledger, st.budgets)
	svc, err := tasks.New(tasks.Config{
		Store:                st.store,
		Media:                st.media,
		Routes:               a.routes,
		Client:               &http.Client{Transport: a.transport.Transport},
		Biller:               taskBiller{engine: engine, app: a},
		TTL:                  time.Duration(a.Tasks.TTL),
		MediaTTL:             time.Duration(a.Tasks.MediaTTL),
		PollInterval:         time.Duration(a.Tasks.PollInterval),
		MaxConcurrentCreates: a.Tasks.MaxConcurrentCreates,
		MaxJSONDepth:         a.MaxJSONDepth,
		Logger:               a.logger.Named("tasks"),
		Observer:             a.taskObserver(),
	})
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
	return &runtime{billing: engine, tasks: svc}, nil
}

// runBackground runs the task poller until ctx is done. It resumes the
// running tasks of the store, so tasks survive reloads and restarts.
func (a *App) runBackground(ctx context.Context, rt *runtime) {
	rt.tasks.Run(ctx)
}

// runtimeState returns the started runtime, or nil before Start and once
// its state is closed.
func (a *App) runtimeState() *runtime {
	if a.current() == nil {
		return nil
	}
	return a.live.rt.Load()
}

// taskBiller charges succeeded tasks to the ledger, idempotently by task id.
type taskBiller struct {
	engine *billing.Engine
	app    *App
}

// ChargeTask implements tasks.Biller.
func (b taskBiller) ChargeTask(ctx context.Context, c tasks.Charge) error {
	rec, fresh, err := b.engine.Charge(ctx, billing.Record{
		ID:          c.TaskID,
		Endpoint:    billing.EndpointTasks,
		User:        c.User,
		KeyID:       c.KeyID,
		Model:       c.Model,
		Provider:    c.Provider,
		Source:      billing.SourceUnits,
		Status:      http.StatusOK,
		Outcome:     billing.OutcomeOK,
		Images:      c.Images,
		VideoMillis: c.VideoSeconds * 1000,
	})
	if err == nil && fresh {
		b.app.metricsRoute(c.Model).Charge(rec.Currency, int64(rec.Cost), c.User, c.KeyID)
	}
	return err
}

// taskObserver is what the task service reports to, nil when metrics are
// off.
func (a *App) taskObserver() tasks.Observer {
	if a.metrics == nil {
		return nil
	}
	return a.metrics
}

var _ tasks.Biller = taskBiller{}

// logAtStart reports what a config starts with.
func (a *App) logAtStart() {
	a.logger.Info("air app started",
		zap.String("storage", a.Storage.Dir),
		zap.Int("providers", len(a.Providers)),
		zap.Int("models", len(a.Models)),
		zap.Bool("priced", a.Prices != ""))
}
