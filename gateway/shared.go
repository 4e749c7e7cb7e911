// Package gateway is the Caddy-free core of the air app: what outlives a
// config reload (Shared: the store and the services whose in-memory data
// must stay consistent with it), what one started config serves with
// (Services: prices, routes, the billing engine, the pollers), and the
// holder of both that handlers read per request (Live). caddymodule maps
// Caddy's Provision/Start/Stop onto them; nothing here imports Caddy.
package gateway

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/caddy-air/caddy-air/audit"
	"github.com/caddy-air/caddy-air/billing"
	"github.com/caddy-air/caddy-air/holds"
	"github.com/caddy-air/caddy-air/keys"
	"github.com/caddy-air/caddy-air/reqlog"
	"github.com/caddy-air/caddy-air/responses"
	"github.com/caddy-air/caddy-air/store"
	"github.com/caddy-air/caddy-air/tasks"
	"github.com/caddy-air/caddy-air/teams"
)

// Shared is what outlives a config: the backend's repositories and the
// services whose in-memory data must stay consistent with them. One is
// open per storage, shared by the configs that use it (a reload starts
// the next config before the old one stops).
type Shared struct {
	// Repos are the backend's repositories.
	Repos store.Repos
	// Keys authenticates API keys and keeps them.
	Keys *keys.Service
	// Ledger writes the ledger records and their intents.
	Ledger *billing.Ledger
	// Budgets keeps limits, spend and reservations.
	Budgets *billing.Budgets
	// Teams keeps teams and the membership read on every request.
	Teams *teams.Service
	// Audit records the changes operators and users make.
	Audit *audit.Log
	// RequestLogs stores request logs in the background; nil without a
	// request-log store.
	RequestLogs *reqlog.Queue
	// TaskHolds keeps the budget holds of the running tasks created
	// through this Shared, across config reloads.
	TaskHolds *tasks.Holds
	// ResponseHolds keeps the budget holds of the running background
	// responses created through this Shared, across config reloads.
	ResponseHolds *responses.Holds
	// BatchHolds keeps the budget holds of the running batches created
	// through this Shared, across config reloads.
	BatchHolds *holds.Set
	// Guard refuses new billable work before the storage runs out.
	Guard *Guard
	// stop ends the services' watches of the repositories.
	stop context.CancelFunc
	// interrupted settles, once, the requests the last stop interrupted.
	interrupted sync.Once
	// closed is set once the Shared closed, after the last config let go
	// and the last exchange in flight ended: requests that still arrive
	// (on connections of a stopped server) are refused.
	closed atomic.Bool
	// drain counts the exchanges in flight, which keep the Shared open.
	drain drain
	// key is the Shared's key among the draining ones (Options.Key).
	key string
	log *zap.Logger
}

// Options are how Open sets up a Shared on its repositories.
type Options struct {
	// Key identifies the storage (the usage pool's key): a config that
	// starts on a storage still draining takes it back (Resume).
	Key string
	// Several is set when several instances share the backend
	// (PostgreSQL): budgets are admitted against leased slices and shared
	// rate limits, and teams are reloaded every TeamsRefresh.
	Several bool
	// TeamsRefresh is how often teams are reloaded when Several is set.
	TeamsRefresh time.Duration
	// Dir is the storage directory whose free space Guard measures, ""
	// for a backend without one.
	Dir string
	// MinFree is the free space kept beyond the store's own reserve.
	MinFree int64
	// RequestLogQueue is how many request logs may wait to be stored.
	RequestLogQueue int
	// RequestLogTTL is how long a request log is kept by default.
	RequestLogTTL time.Duration
	// Logger logs the Shared's events; nil for none.
	Logger *zap.Logger
}

// Open opens the services on top of repos, which it owns from then on:
// they are closed on failure, and when the Shared closes.
func Open(repos store.Repos, o Options) (*Shared, error) {
	log := o.Logger
	if log == nil {
		log = zap.NewNop()
	}
	ctx, stop := context.WithCancel(context.Background())
	budgets, err := billing.NewBudgets(ctx, repos.Budgets)
	if err != nil {
		stop()
		_ = repos.Close()
		return nil, fmt.Errorf("loading budgets: %w", err)
	}
	ledger := billing.NewLedger(repos.Ledger, repos.Intents, log.Named("ledger"))
	var refresh time.Duration
	if o.Several {
		// Several instances share the budgets: admit against leased
		// slices of them and shared rate limits.
		budgets.Share(ctx, billing.SharedConfig{RateLimits: repos.RateLimits, Flush: ledger.Flush})
		refresh = o.TeamsRefresh // other instances change them too
	}
	ts, err := teams.NewService(ctx, repos.Teams, refresh)
	if err != nil {
		stop()
		_ = repos.Close()
		return nil, err
	}
	ks := keys.NewService(ctx, repos.Keys)
	var rq *reqlog.Queue
	if repos.RequestLogs != nil {
		red, _ := reqlog.NewRedactor() // the built-in patterns compile
		rq = reqlog.NewQueue(repos.RequestLogs, red, o.RequestLogQueue, o.RequestLogTTL)
	}
	ks.Limiter = budgets // a key's spend limit is a budget of scope "key"
	return &Shared{
		Repos:         repos,
		Keys:          ks,
		Ledger:        ledger,
		Budgets:       budgets,
		Teams:         ts,
		Audit:         audit.New(repos.Audit),
		RequestLogs:   rq,
		TaskHolds:     tasks.NewHolds(),
		ResponseHolds: responses.NewHolds(),
		BatchHolds:    holds.New(),
		Guard:         NewGuard(o.Dir, o.MinFree, repos.Reserve, ledger.Backlogged, log.Named("storage")),
		stop:          stop,
		key:           o.Key,
		log:           log,
	}, nil
}

// Destruct is called once no config uses s (caddy.Destructor): it closes
// s when no exchange is in flight through it, else when the last one ends
// (see drain).
func (s *Shared) Destruct() error { return s.shutDown() }

// Closed reports whether s has closed: requests are then refused.
func (s *Shared) Closed() bool { return s.closed.Load() }

// close drains the ledger and closes the backend.
func (s *Shared) close() error {
	draining.CompareAndDelete(s.key, s)
	s.closed.Store(true)
	s.stop()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	// The last minute's key uses; losing them only leaves last_used older.
	_ = s.Keys.FlushUses(ctx)
	if s.RequestLogs != nil {
		s.RequestLogs.Close() // the logs still queued, before the store closes
	}
	lerr := s.Ledger.Close()
	berr := s.Budgets.Close(ctx)
	return errors.Join(lerr, berr, s.Repos.Close())
}
