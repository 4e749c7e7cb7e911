package caddymodule

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/caddyserver/caddy/v2"
	"go.uber.org/zap"

	"github.com/caddy-air/caddy-air/audit"
	"github.com/caddy-air/caddy-air/billing"
	"github.com/caddy-air/caddy-air/caddymodule/airmod"
	"github.com/caddy-air/caddy-air/holds"
	"github.com/caddy-air/caddy-air/keys"
	"github.com/caddy-air/caddy-air/reqlog"
	"github.com/caddy-air/caddy-air/responses"
	"github.com/caddy-air/caddy-air/store"
	"github.com/caddy-air/caddy-air/tasks"
	"github.com/caddy-air/caddy-air/teams"
)

// statePool holds the state of each storage backend across config
// reloads. Badger locks its directory even within one process, and during
// a reload the new config starts before the old one stops, so both must
// share one open backend.
var statePool = caddy.NewUsagePool()

// state is what outlives a config: the backend's repositories and the
// services whose in-memory data must stay consistent with them.
type state struct {
	repos   store.Repos
	keys    *keys.Service
	ledger  *billing.Ledger
	budgets *billing.Budgets
	// teams keeps teams and the membership read on every request.
	teams *teams.Service
	// audit records the changes operators and users make.
	audit *audit.Log
	// reqlogs stores request logs in the background; nil without a
	// request-log store.
	reqlogs *reqlog.Queue
	// taskHolds keeps the budget holds of the running tasks created
	// through this state, across config reloads.
	taskHolds *tasks.Holds
	// responseHolds keeps the budget holds of the running background
	// responses created through this state, across config reloads.
	responseHolds *responses.Holds
	// batchHolds keeps the budget holds of the running batches created
	// through this state, across config reloads.
	batchHolds *holds.Set
	guard      *storageGuard
	// stop ends the services' watches of the repositories.
	stop context.CancelFunc
	// interrupted settles, once, the requests the last stop interrupted.
	interrupted sync.Once
	// closed is set once the state closed, after the last config let go
	// and the last exchange in flight ended: requests that still arrive
	// (on connections of a stopped server) are refused.
	closed atomic.Bool
	// drain counts the exchanges in flight, which keep the state open.
	drain drain
	// poolKey is the state's key in statePool.
	poolKey string
	log     *zap.Logger
}

// teamsRefresh is how often an instance of a shared backend reloads the
// teams, so that a change made through another instance applies here
// within it.
const teamsRefresh = 2 * time.Second

// openState opens the backend that s selects and the services on top of
// its repositories.
func openState(s airmod.Storage, ledgerRetention time.Duration, minFree int64, log *zap.Logger) (*state, error) {
	repos, err := openRepos(s, ledgerRetention, log)
	if err != nil {
		return nil, err
	}
	ctx, stop := context.WithCancel(context.Background())
	budgets, err := billing.NewBudgets(ctx, repos.Budgets)
	if err != nil {
		stop()
		_ = repos.Close()
		return nil, fmt.Errorf("loading budgets: %w", err)
	}
	ledger := billing.NewLedger(repos.Ledger, repos.Intents, log.Named("ledger"))
	if s.Shared() {
		// Several instances share the budgets: admit against leased
		// slices of them and shared rate limits.
		budgets.Share(ctx, billing.SharedConfig{RateLimits: repos.RateLimits, Flush: ledger.Flush})
	}
	var refresh time.Duration
	if s.Shared() {
		refresh = teamsRefresh // other instances change them too
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
		rq = reqlog.NewQueue(repos.RequestLogs, red, reqlogQueue, reqlogTTL)
	}
	ks.Limiter = budgets // a key's spend limit is a budget of scope "key"
	return &state{
		repos:         repos,
		keys:          ks,
		ledger:        ledger,
		budgets:       budgets,
		teams:         ts,
		audit:         audit.New(repos.Audit),
		reqlogs:       rq,
		taskHolds:     tasks.NewHolds(),
		responseHolds: responses.NewHolds(),
		batchHolds:    holds.New(),
		guard:         newStorageGuard(s.Directory(), minFree, repos.Reserve, ledger.Backlogged, log.Named("storage")),
		stop:          stop,
		log:           log,
	}, nil
}

// Destruct is called once no config uses the state: it closes the state
// when no exchange is in flight through it, else when the last one ends
// (see drain).
func (s *state) Destruct() error { return s.shutDown() }

// close drains the ledger and closes the backend.
func (s *state) close() error {
	draining.CompareAndDelete(s.poolKey, s)
	s.closed.Store(true)
	s.stop()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	// The last minute's key uses; losing them only leaves last_used older.
	_ = s.keys.FlushUses(ctx)
	if s.reqlogs != nil {
		s.reqlogs.Close() // the logs still queued, before the store closes
	}
	lerr := s.ledger.Close()
	berr := s.budgets.Close(ctx)
	return errors.Join(lerr, berr, s.repos.Close())
}
