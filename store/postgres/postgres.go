// Package postgres is caddy-air's shared storage backend: the repositories
// of package store on PostgreSQL through pgx/v5 and its pool, so that
// several gateway instances share keys, ledger, budgets, rate limits,
// tasks and media. The schema is a set of embedded SQL migrations (see
// Migrate), applied at Open under an advisory lock.
//
// Connection strings are secrets: this package never logs them and puts
// only RedactDSN's form into errors.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"

	"github.com/caddy-air/caddy-air/store"
)

// instanceLease is how long an instance counts as alive after its last
// heartbeat; it renews it every third of that. The intents of an instance
// that died are taken over once its lease expired.
const instanceLease = 15 * time.Second

// defaultMaxConns is the pool's size when the DSN does not set
// pool_max_conns.
const defaultMaxConns = 16

// sweepInterval is how often each instance tries to run the retention
// job; one at a time does (see Sweep).
const sweepInterval = time.Minute

// Options configures Open.
type Options struct {
	// DSN is the connection string, as a URL (postgres://user:pw@host/db)
	// or in keyword form (host=… dbname=…); pool settings such as
	// pool_max_conns (default here: 16) may be added to it.
	DSN string
	// Retention is how long ledger records are kept; zero keeps them
	// forever.
	Retention time.Duration
	// Logger receives the backend's own log lines; nil discards them.
	Logger *zap.Logger
	// IntentGather is the least time between the starts of two commits
	// of ledger intents under load (see Intents); zero means
	// IntentGather, negative none (each commit starts as soon as the
	// previous one ended).
	IntentGather time.Duration
}

// DB is an open PostgreSQL backend: a connection pool on a migrated
// schema, registered as one gateway instance.
type DB struct {
	pool      *pgxpool.Pool
	log       *zap.Logger
	retention time.Duration
	// instance is this process's id in air_instances.
	instance string
	// dsn is what Open was given, kept for reopening in tests; never
	// logged.
	dsn string

	intents *Intents
	// journaled are the records that Ledger.Write journaled and no
	// Ledger.Sync has yet written to the ledger (see journal.go).
	journaled journaled
	stop      context.CancelFunc
	done      chan struct{}
	closeOnce sync.Once
}

// Open connects to the database, applies the migrations it lacks,
// registers the instance and starts its heartbeat.
func Open(ctx context.Context, o Options) (*DB, error) {
	pool, err := Connect(ctx, o.DSN)
	if err != nil {
		return nil, err
	}
	log := o.Logger
	if log == nil {
		log = zap.NewNop()
	}
	applied, err := Migrate(ctx, pool)
	if err != nil {
		pool.Close()
		return nil, err
	}
	for _, m := range applied {
		log.Info("applied schema migration", zap.Int64("version", m.Version), zap.String("name", m.Name))
	}
	db := &DB{pool: pool, log: log, retention: o.Retention, instance: newID(), dsn: o.DSN, done: make(chan struct{})}
	if err := db.heartbeat(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres: registering the instance: %w", err)
	}
	hbCtx, cancel := context.WithCancel(context.Background())
	db.stop = cancel
	go db.beat(hbCtx)
	gather := o.IntentGather
	switch {
	case gather == 0:
		gather = IntentGather
	case gather < 0:
		gather = 0
	}
	db.intents = newIntents(db, gather)
	return db, nil
}

// Connect opens a pool on dsn and checks that the server answers, within
// 10 seconds. Its errors never carry the password.
func Connect(ctx context.Context, dsn string) (*pgxpool.Pool, error) {
	if dsn == "" {
		return nil, errors.New("postgres: empty connection string")
	}
	// pgx redacts the password in its parse errors itself.
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	if !strings.Contains(dsn, "pool_max_conns") {
		// pgx's default, the number of CPUs (at least 4), is too few for
		// a gateway whose requests wait on the network, not the CPU.
		cfg.MaxConns = defaultMaxConns
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: %s: %w", RedactDSN(dsn), err)
	}
	pingCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := pool.Ping(pingCtx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres: connecting to %s: %w", RedactDSN(dsn), err)
	}
	return pool, nil
}

// Repos returns the backend's repositories; their Closer closes db.
func (db *DB) Repos() store.Repos {
	return store.Repos{
		Keys:        &Keys{db: db},
		Ledger:      &Ledger{db: db, retention: db.retention},
		Intents:     db.intents,
		Budgets:     &Budgets{db: db},
		Teams:       &Teams{db: db},
		RateLimits:  &RateLimits{db: db},
		Tasks:       &Tasks{db: db},
		Files:       &Tasks{db: db, table: "air_files"},
		Batches:     &Tasks{db: db, table: "air_batches"},
		Media:       &Media{db: db},
		Responses:   &Responses{db: db},
		Audit:       &Audit{db: db},
		Alerts:      &Alerts{db: db},
		RequestLogs: &RequestLogs{db: db},
		Probe:       db,
		Closer:      db,
	}
}

// Probe implements store.Prober: txid_current assigns a transaction id,
// which only a server that takes writes does (a standby in recovery
// refuses it), without writing a row.
func (db *DB) Probe(ctx context.Context) error {
	var id int64
	return db.pool.QueryRow(ctx, "SELECT txid_current()").Scan(&id)
}

// Pool returns the connection pool.
func (db *DB) Pool() *pgxpool.Pool { return db.pool }

// Instance returns this instance's id.
func (db *DB) Instance() string { return db.instance }

// heartbeat renews the instance's lease.
func (db *DB) heartbeat(ctx context.Context) error {
	_, err := db.pool.Exec(ctx, `INSERT INTO air_instances (id, started, expires) VALUES ($1, now(), now() + $2::interval)
		ON CONFLICT (id) DO UPDATE SET expires = EXCLUDED.expires`, db.instance, instanceLease)
	return err
}

// beat renews the instance lease every third of it, and runs the
// retention job (Sweep) every sweepInterval, until ctx ends.
func (db *DB) beat(ctx context.Context) {
	defer close(db.done)
	t := time.NewTicker(instanceLease / 3)
	defer t.Stop()
	lastSweep := time.Time{}
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := db.heartbeat(ctx); err != nil && ctx.Err() == nil {
			db.log.Warn("renewing the instance lease failed", zap.Error(err))
		}
		if time.Since(lastSweep) < sweepInterval {
			continue
		}
		lastSweep = time.Now()
		s, err := db.Sweep(ctx, lastSweep)
		switch {
		case err != nil && ctx.Err() == nil:
			db.log.Warn("the retention job failed", zap.Error(err))
		case s.Records+s.Tasks+s.Media+s.Files+s.Batches > 0:
			db.log.Info("deleted expired rows", zap.Int64("records", s.Records), zap.Int64("tasks", s.Tasks), zap.Int64("media", s.Media),
				zap.Int64("files", s.Files), zap.Int64("batches", s.Batches))
		}
	}
}

// Close writes the queued intents, ends the instance's lease (its
// unresolved intents are then taken over by the next Interrupted of any
// instance) and closes the pool.
func (db *DB) Close() error {
	db.closeOnce.Do(func() {
		db.intents.close()
		db.stop()
		<-db.done
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, err := db.pool.Exec(ctx, `UPDATE air_instances SET expires = now() WHERE id = $1`, db.instance); err != nil {
			db.log.Warn("ending the instance lease failed", zap.Error(err))
		}
		db.pool.Close()
	})
	return nil
}
