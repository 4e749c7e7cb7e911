package pgtest

import (
	"context"
	"net/url"
	"testing"

	"github.com/jackc/pgx/v5"
)

func TestMain(m *testing.M) { Main(m) }

// TestDSNGivesFreshDatabases checks that each test gets its own empty
// database, that it is writable, and that it is gone after the test.
func TestDSNGivesFreshDatabases(t *testing.T) {
	ctx := context.Background()
	_ = DSN(t) // skips or fails the test when there is no cluster
	var first string
	t.Run("a", func(t *testing.T) {
		first = DSN(t)
		conn, err := pgx.Connect(ctx, first)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "CREATE TABLE x (v int); INSERT INTO x VALUES (1)"); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("b", func(t *testing.T) {
		dsn := DSN(t)
		if dsn == first {
			t.Fatalf("two tests got the same database %s", dsn)
		}
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		var n int
		if err := conn.QueryRow(ctx, "SELECT count(*) FROM pg_tables WHERE tablename = 'x'").Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 0 {
			t.Errorf("a fresh database has the previous test's table")
		}
	})
	u, _ := url.Parse(first)
	conn, err := pgx.Connect(ctx, serverDSN)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM pg_database WHERE datname = $1", u.Path[1:]).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("database %s still exists after its test", u.Path[1:])
	}
}
