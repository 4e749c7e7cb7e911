package postgres

import (
	"context"
	"embed"
	"fmt"
	"io/fs"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
)

// migrationFiles are the schema's migrations, applied in the order of
// their numbers; a file once released is never edited, only followed.
//
//go:embed migrations/*.sql
var migrationFiles embed.FS

// migrationTable records which migrations a database has had.
const migrationTable = "air_schema_migrations"

// migrationLockID is the advisory lock that serializes migrations: several
// instances starting at once apply each migration once, one after another
// (the number spells "air-migr").
const migrationLockID int64 = 0x6169722d6d696772

// Migration is one applied migration.
type Migration struct {
	// Version is the migration's number.
	Version int64
	// Name is its file name.
	Name string
}

// Migrate applies the migrations that the database behind pool has not had
// yet, under a PostgreSQL advisory lock, and returns them (none when the
// schema is current).
func Migrate(ctx context.Context, pool *pgxpool.Pool) ([]Migration, error) {
	p, closeDB, err := provider(pool)
	if err != nil {
		return nil, err
	}
	defer closeDB()
	results, err := p.Up(ctx)
	if err != nil {
		return nil, fmt.Errorf("applying migrations: %w", err)
	}
	applied := make([]Migration, 0, len(results))
	for _, r := range results {
		if r.Empty {
			continue
		}
		applied = append(applied, Migration{Version: r.Source.Version, Name: nameOf(r.Source.Path)})
	}
	return applied, nil
}

// SchemaVersion returns the number of the newest migration the database has
// had and the newest this build knows.
func SchemaVersion(ctx context.Context, pool *pgxpool.Pool) (current, latest int64, err error) {
	p, closeDB, err := provider(pool)
	if err != nil {
		return 0, 0, err
	}
	defer closeDB()
	return p.GetVersions(ctx)
}

// provider builds goose's migration provider over pool, with the
// session-level advisory lock; the returned func releases its sql.DB
// (the pool stays open).
func provider(pool *pgxpool.Pool) (*goose.Provider, func(), error) {
	files, err := fs.Sub(migrationFiles, "migrations")
	if err != nil {
		return nil, nil, err
	}
	// Another instance may hold the lock for as long as its migrations
	// take: wait up to 10 minutes, trying every second.
	locker, err := lock.NewPostgresSessionLocker(lock.WithLockID(migrationLockID), lock.WithLockTimeout(1, 600))
	if err != nil {
		return nil, nil, err
	}
	db := stdlib.OpenDBFromPool(pool)
	p, err := goose.NewProvider(goose.DialectPostgres, db, files,
		goose.WithSessionLocker(locker),
		goose.WithTableName(migrationTable),
		goose.WithDisableGlobalRegistry(true),
	)
	if err != nil {
		_ = db.Close()
		return nil, nil, fmt.Errorf("reading migrations: %w", err)
	}
	return p, func() { _ = db.Close() }, nil
}

func nameOf(path string) string {
	for i := len(path) - 1; i >= 0; i-- {
		if path[i] == '/' {
			return path[i+1:]
		}
	}
	return path
}
