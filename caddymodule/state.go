package caddymodule

import (
	"context"
	"fmt"
	"time"

	"github.com/caddyserver/caddy/v2"
	"go.uber.org/zap"

	"github.com/caddy-air/caddy-air/gateway"
	"github.com/caddy-air/caddy-air/store"
	"github.com/caddy-air/caddy-air/store/badger"
	"github.com/caddy-air/caddy-air/store/postgres"
)

// statePool holds the gateway.Shared of each storage backend across
// config reloads. Badger locks its directory even within one process, and during
// a reload the new config starts before the old one stops, so both must
// share one open backend.
var statePool = caddy.NewUsagePool()

// teamsRefresh is how often an instance of a shared backend reloads the
// teams, so that a change made through another instance applies here
// within it.
const teamsRefresh = 2 * time.Second

// openTimeout bounds how long opening a shared backend (connecting and
// migrating) may take.
const openTimeout = 2 * time.Minute

// openRepos opens the repositories of s's backend. Validate has checked
// that the backend exists.
func openRepos(s *Storage, ledgerRetention time.Duration, log *zap.Logger) (store.Repos, error) {
	switch s.Backend {
	case backendBadger:
		return badger.OpenRepos(badger.Config{Dir: s.Dir, LedgerRetention: ledgerRetention, Logger: log})
	case backendPostgres:
		ctx, cancel := context.WithTimeout(context.Background(), openTimeout)
		defer cancel()
		o := postgres.Options{DSN: s.dsn, Retention: ledgerRetention, Logger: log.Named("postgres")}
		if s.IntentGather != nil {
			// In Options zero is the default and negative none.
			o.IntentGather = time.Duration(*s.IntentGather)
			if o.IntentGather == 0 {
				o.IntentGather = -1
			}
		}
		db, err := postgres.Open(ctx, o)
		if err != nil {
			return store.Repos{}, err
		}
		return db.Repos(), nil
	}
	return store.Repos{}, fmt.Errorf("storage backend %q is not supported", s.Backend)
}

// openState opens the backend that s selects and the services on top of
// its repositories, under key in statePool.
func openState(s *Storage, key string, ledgerRetention time.Duration, minFree int64, log *zap.Logger) (*gateway.Shared, error) {
	repos, err := openRepos(s, ledgerRetention, log)
	if err != nil {
		return nil, err
	}
	return gateway.Open(repos, gateway.Options{
		Key:             key,
		Several:         s.Backend == backendPostgres,
		TeamsRefresh:    teamsRefresh,
		Dir:             s.Dir,
		MinFree:         minFree,
		RequestLogQueue: reqlogQueue,
		RequestLogTTL:   reqlogTTL,
		Logger:          log,
	})
}
