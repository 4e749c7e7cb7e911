package caddymodule

import (
	"time"

	"github.com/caddyserver/caddy/v2"
	"go.uber.org/zap"

	"github.com/caddy-air/caddy-air/caddymodule/airmod"
	"github.com/caddy-air/caddy-air/gateway"
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

// openState opens the backend that s selects and the services on top of
// its repositories, under key in statePool.
func openState(s airmod.Storage, key string, ledgerRetention time.Duration, minFree int64, log *zap.Logger) (*gateway.Shared, error) {
	repos, err := openRepos(s, ledgerRetention, log)
	if err != nil {
		return nil, err
	}
	return gateway.Open(repos, gateway.Options{
		Key:             key,
		Several:         s.Shared(),
		TeamsRefresh:    teamsRefresh,
		Dir:             s.Directory(),
		MinFree:         minFree,
		RequestLogQueue: reqlogQueue,
		RequestLogTTL:   reqlogTTL,
		Logger:          log,
	})
}
