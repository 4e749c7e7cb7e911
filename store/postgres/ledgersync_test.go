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

// TestLedgerWriteJournals checks Write (ledger_durability journaled): its
// records are in the journal, over their intents, once Write returns, and
// reach the ledger with the next Sync, counted once; the journal's
// commits are asynchronous (the intent writer's session), the ledger's
// synchronous.
func TestLedgerWriteJournals(t *testing.T) {
	ctx := context.Background()
	db := syncCommitDB(t)
	l := db.Repos().Ledger.(*Ledger)
	if err := db.Repos().Intents.Add(rec("a", 0)); err != nil {
		t.Fatal(err)
	}
	if err := l.Write(ctx, []store.Record{rec("a", 100), rec("b", 20)}); err != nil {
		t.Fatal(err)
	}
	var journaled, inLedger int
	if err := db.Pool().QueryRow(ctx, `SELECT count(*) FILTER (WHERE record ? 'Journaled' AND (record->>'Cost')::bigint > 0),
		(SELECT count(*) FROM air_ledger) FROM air_intents`).Scan(&journaled, &inLedger); err != nil {
		t.Fatal(err)
	}
	if journaled != 2 || inLedger != 0 {
		t.Errorf("after Write: %d records journaled, %d in the ledger; want 2 and 0 (the ledger's statement waits for Sync)", journaled, inLedger)
	}
	var sc string
	if err := db.intents.conn.QueryRow(ctx, `SELECT current_setting('synchronous_commit')`).Scan(&sc); err != nil || sc != "off" {
		t.Errorf("the journal's session commits with synchronous_commit %q (%v), want off", sc, err)
	}
	if err := l.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if n := len(db.journaled.recs); n != 0 {
		t.Errorf("%d records still wait for a Sync after it", n)
	}
	var tot store.Totals
	if err := l.Usage(ctx, store.UsageFilter{}, func(a store.Aggregate) error { tot.Merge(&a.Totals); return nil }); err != nil {
		t.Fatal(err)
	}
	if tot.Requests != 2 || tot.Cost != 120 {
		t.Errorf("totals %+v after Sync, want 2 records costing 120", tot)
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
