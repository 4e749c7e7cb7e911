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
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"
)

// Options configures Open.
type Options struct {
	// DSN is the connection string, as a URL (postgres://user:pw@host/db)
	// or in keyword form (host=… dbname=…); pool settings such as
	// pool_max_conns may be added to it.
	DSN string
	// Logger receives the backend's own log lines; nil discards them.
	Logger *zap.Logger
}

// DB is an open PostgreSQL backend: a connection pool on a migrated
// schema.
type DB struct {
	pool *pgxpool.Pool
	log  *zap.Logger
}

// Open connects to the database, applies the migrations it lacks and
// returns the backend.
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
	return &DB{pool: pool, log: log}, nil
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

// Pool returns the connection pool.
func (db *DB) Pool() *pgxpool.Pool { return db.pool }

// Close closes the pool.
func (db *DB) Close() error {
	db.pool.Close()
	return nil
}
