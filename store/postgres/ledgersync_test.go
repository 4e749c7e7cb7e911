package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/caddy-air/caddy-air/internal/pgtest"
	"github.com/caddy-air/caddy-air/store"
)

// syncCommitDB opens an instance on a fresh database whose sessions
// commit synchronously, as a production server's do (the test cluster
// turns synchronous_commit off for speed).
func syncCommitDB(t *testing.T) *DB {
	t.Helper()
	ctx := context.Background()
	dsn := pgtest.DSN(t)
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	var name string
	if err := conn.QueryRow(ctx, `SELECT current_database()`).Scan(&name); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `ALTER DATABASE `+pgx.Identifier{name}.Sanitize()+` SET synchronous_commit = on`); err != nil {
		t.Fatal(err)
	}
	_ = conn.Close(ctx)
	db, err := Open(ctx, Options{DSN: dsn, Retention: 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// TestLedgerWriteCommitsAsynchronously checks the statement of Write
// (ledger_durability journaled): it turns synchronous_commit off for its
// own transaction, and for nothing after it, so that a pool connection
// does not carry asynchronous commits into Append or Insert (strict mode,
// tasks).
func TestLedgerWriteCommitsAsynchronously(t *testing.T) {
	ctx := context.Background()
	db := syncCommitDB(t)
	conn, err := db.Pool().Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	setting := func(q pgx.Row) string {
		var s string
		if err := q.Scan(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	const show = `SELECT current_setting('synchronous_commit')`
	if s := setting(conn.QueryRow(ctx, show)); s != "on" {
		t.Fatalf("synchronous_commit of a pool connection is %q, want on", s)
	}
	arg := appendLedgerRecords(nil, []store.Record{rec("w1", 10)})
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if err := tx.QueryRow(ctx, insertLedgerAsync, string(arg)).Scan(&n); err != nil || n != 1 {
		t.Fatalf("the asynchronous insert wrote %d records, %v; want 1", n, err)
	}
	if s := setting(tx.QueryRow(ctx, show)); s != "off" {
		t.Errorf("synchronous_commit within Write's transaction is %q, want off", s)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if s := setting(conn.QueryRow(ctx, show)); s != "on" {
		t.Errorf("synchronous_commit after Write's transaction is %q, want on again", s)
	}
}

// TestLedgerWriteAndSync checks Write and Sync on PostgreSQL: written
// records are stored and counted once (a retried batch too), and Sync
// returns once the server's WAL is flushed past them.
func TestLedgerWriteAndSync(t *testing.T) {
	ctx := context.Background()
	db := syncCommitDB(t)
	l := db.Repos().Ledger.(*Ledger)
	batch := []store.Record{rec("a", 100), rec("b", 20)}
	for range 2 { // a retry of the same batch counts nothing twice
		if err := l.Write(ctx, batch); err != nil {
			t.Fatal(err)
		}
	}
	var written string
	if err := db.Pool().QueryRow(ctx, `SELECT pg_current_wal_insert_lsn()::text`).Scan(&written); err != nil {
		t.Fatal(err)
	}
	if err := l.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	var flushed bool
	if err := db.Pool().QueryRow(ctx, `SELECT pg_current_wal_flush_lsn() >= $1::pg_lsn`, written).Scan(&flushed); err != nil {
		t.Fatal(err)
	}
	if !flushed {
		t.Error("Sync returned before the WAL of the written records was flushed")
	}
	var tot store.Totals
	if err := l.Usage(ctx, store.UsageFilter{}, func(a store.Aggregate) error { tot.Merge(&a.Totals); return nil }); err != nil {
		t.Fatal(err)
	}
	if tot.Requests != 2 || tot.Cost != 120 {
		t.Errorf("totals %+v, want 2 records costing 120", tot)
	}
}
