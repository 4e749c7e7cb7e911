package badger

import (
	"context"
	"errors"
	"path/filepath"
	"time"

	"go.uber.org/zap"

	"github.com/caddy-air/caddy-air/store"
	"github.com/caddy-air/caddy-air/store/mediafs"
)

// Folders of the storage directory: the ledger's journal (with its
// intents) and the re-hosted media. Badger ignores folders in its
// directory.
const (
	LedgerDir = "ledger"
	MediaDir  = "media"
)

// Config configures the Badger backend.
type Config struct {
	// Dir is the storage directory: the Badger database, with the ledger's
	// journal and the media in folders of it.
	Dir string
	// LedgerRetention is how long ledger records are kept; zero means
	// DefaultRetention.
	LedgerRetention time.Duration
	// Logger receives the backend's logs; nil discards them.
	Logger *zap.Logger
}

// OpenRepos opens the Badger backend in c.Dir and returns its
// repositories. Closing them closes the ledger, then the database.
func OpenRepos(c Config) (store.Repos, error) {
	log := c.Logger
	if log == nil {
		log = zap.NewNop()
	}
	db, err := Open(Options{Dir: c.Dir, Logger: log.Named("badger")})
	if err != nil {
		return store.Repos{}, err
	}
	// Media leave the store's reserve alone (room.go).
	media, err := mediafs.Open(mediafs.Options{Dir: filepath.Join(c.Dir, MediaDir), Room: func() error { return db.room.check(0) }})
	if err != nil {
		_ = db.Close()
		return store.Repos{}, err
	}
	keys, err := OpenKeys(context.Background(), db, log.Named("keys"))
	if err != nil {
		_ = db.Close()
		return store.Repos{}, err
	}
	ledger, err := OpenLedger(db, filepath.Join(c.Dir, LedgerDir), c.LedgerRetention, log.Named("ledger"))
	if err != nil {
		_ = db.Close()
		return store.Repos{}, err
	}
	return store.Repos{
		Keys:        keys,
		Ledger:      ledger,
		Intents:     ledger.Intents(),
		Budgets:     NewBudgets(db),
		Teams:       NewTeams(db),
		RateLimits:  NewRateLimits(),
		Tasks:       NewTasks(db),
		Files:       NewDocs(db, filesSpace),
		Batches:     NewDocs(db, batchesSpace),
		Media:       WithLegacyMedia(media, db),
		Responses:   NewResponses(db),
		Audit:       NewAudit(db),
		Alerts:      NewAlerts(db),
		Probe:       prober{db},
		Reserve:     db.room.reserve,
		Closer:      closer{ledger, db},
		RequestLogs: NewRequestLogs(db),
	}, nil
}

// probeKey is where the health check's write probe writes.
var probeKey = []byte("air/health/probe")

// prober writes probeKey, with a TTL of a minute.
type prober struct{ db *DB }

// Probe implements store.Prober.
func (p prober) Probe(ctx context.Context) error {
	return p.db.Set(ctx, probeKey, []byte(time.Now().UTC().Format(time.RFC3339Nano)), time.Minute)
}

// closer closes the ledger, then the database.
type closer struct {
	ledger *Ledger
	db     *DB
}

func (c closer) Close() error { return errors.Join(c.ledger.Close(), c.db.Close()) }
