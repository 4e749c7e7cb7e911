package caddymodule

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/caddyserver/caddy/v2"
	"go.uber.org/zap"

	"github.com/caddy-air/caddy-air/billing"
	"github.com/caddy-air/caddy-air/keys"
	"github.com/caddy-air/caddy-air/store"
	"github.com/caddy-air/caddy-air/store/badger"
	"github.com/caddy-air/caddy-air/store/mediafs"
)

// statePool holds the state of each storage directory across config
// reloads. Badger locks its directory even within one process, and during a
// reload the new config starts before the old one stops, so both must share
// one open database.
var statePool = caddy.NewUsagePool()

// state is what outlives a config: the open store and the services whose
// in-memory data must stay consistent with it.
type state struct {
	store   *badger.DB
	media   store.MediaStore
	tasks   store.Tasks
	keys    *keys.Service
	ledger  *billing.Ledger
	budgets *billing.Budgets
	guard   *storageGuard
	// interrupted settles, once, the requests the last stop interrupted.
	interrupted sync.Once
	// closed is set once the last config let go of the state: requests
	// that still arrive (on connections of a stopped server) are refused.
	closed atomic.Bool
}

// Folders of the storage directory: the ledger's journal and the
// re-hosted media of tasks. Badger ignores folders in its directory.
const (
	ledgerDir = "ledger"
	mediaDir  = "media"
)

// openState opens the Badger store in dir, the ledger's journal in its
// ledger folder, the media store in its media folder, and the services on
// top of them.
func openState(dir string, ledgerRetention time.Duration, minFree int64, log *zap.Logger) (*state, error) {
	media, err := mediafs.Open(mediafs.Options{Dir: filepath.Join(dir, mediaDir)})
	if err != nil {
		return nil, err
	}
	db, err := badger.Open(badger.Options{Dir: dir, Logger: log.Named("badger")})
	if err != nil {
		return nil, err
	}
	budgets, err := billing.NewBudgets(context.Background(), db)
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("loading budgets: %w", err)
	}
	ledger, err := billing.NewLedger(db, filepath.Join(dir, ledgerDir), ledgerRetention, log.Named("ledger"))
	if err != nil {
		_ = db.Close()
		return nil, err
	}
	return &state{
		store:   db,
		media:   badger.WithLegacyMedia(media, db),
		tasks:   badger.NewTasks(db),
		keys:    keys.NewService(context.Background(), badger.NewKeys(db)),
		ledger:  ledger,
		budgets: budgets,
		guard:   newStorageGuard(dir, minFree, ledger.Backlogged, log.Named("storage")),
	}, nil
}

// Destruct closes the store once no config uses it.
func (s *state) Destruct() error {
	s.closed.Store(true)
	s.guard.close()
	return errors.Join(s.ledger.Close(), s.store.Close())
}
