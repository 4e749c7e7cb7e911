package postgres

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/caddy-air/caddy-air/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// TestMigrateOnceAcrossInstances starts several "instances" on one empty
// database at once: each migration must be applied exactly once, and a
// later start applies nothing.
func TestMigrateOnceAcrossInstances(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.DSN(t)
	const instances = 4
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		applied = map[int64]int{}
		errs    []error
	)
	for range instances {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pool, err := Connect(ctx, dsn)
			if err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
				return
			}
			defer pool.Close()
			got, err := Migrate(ctx, pool)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
			}
			for _, m := range got {
				applied[m.Version]++
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		t.Errorf("concurrent migrate: %v", err)
	}
	files, err := migrationFiles.ReadDir("migrations")
	if err != nil {
		t.Fatal(err)
	}
	if len(applied) != len(files) {
		t.Errorf("applied %d distinct migrations, there are %d files", len(applied), len(files))
	}
	for v, n := range applied {
		if n != 1 {
			t.Errorf("migration %d applied %d times", v, n)
		}
	}

	db, err := Open(ctx, Options{DSN: dsn})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	again, err := Migrate(ctx, db.Pool())
	if err != nil {
		t.Fatal(err)
	}
	if len(again) != 0 {
		t.Errorf("a current schema had %d more migrations applied", len(again))
	}
	current, latest, err := SchemaVersion(ctx, db.Pool())
	if err != nil {
		t.Fatal(err)
	}
	if current != latest || latest == 0 {
		t.Errorf("schema version %d, latest %d", current, latest)
	}
}

// TestConnectErrorsHideThePassword checks that a failed connection names
// the server but never the password.
func TestConnectErrorsHideThePassword(t *testing.T) {
	for i, dsn := range []string{
		"postgres://air:s3cr3tpw@127.0.0.1:1/air?sslmode=disable&connect_timeout=2",
		"host=127.0.0.1 port=1 user=air password=s3cr3tpw dbname=air sslmode=disable connect_timeout=2",
		"postgres://air:s3cr3tpw@127.0.0.1:notaport/air",
		"host=127.0.0.1 password='s3cr3tpw' port=x",
	} {
		_, err := Connect(context.Background(), dsn)
		if err == nil {
			t.Errorf("Test %d: connecting to a closed port succeeded", i)
			continue
		}
		if strings.Contains(err.Error(), "s3cr3tpw") {
			t.Errorf("Test %d: error reveals the password: %v", i, err)
		}
	}
}

func TestRedactDSN(t *testing.T) {
	for i, tc := range []struct{ in, want string }{
		{"postgres://air:pw@db:5432/air?sslmode=disable", "postgres://air:xxxxx@db:5432/air?sslmode=disable"},
		{"postgresql://air@db/air", "postgresql://air@db/air"},
		{"postgres://db/air?password=pw&user=air", "postgres://db/air?password=xxxxx&user=air"},
		{"host=db user=air password=pw dbname=air", "host=db user=air password=xxxxx dbname=air"},
		{"host=db password = 'p w\\'x' dbname=air", "host=db password = xxxxx dbname=air"},
		{"postgres://air:p%zz@db/air", "postgres://…"},
	} {
		if got := RedactDSN(tc.in); got != tc.want {
			t.Errorf("Test %d: RedactDSN(%q) = %q, want %q", i, tc.in, got, tc.want)
		}
	}
}
