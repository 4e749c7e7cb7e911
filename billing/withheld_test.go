package billing

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/caddy-air/caddy-air/internal/pgtest"
	"github.com/caddy-air/caddy-air/store"
	"github.com/caddy-air/caddy-air/store/postgres"
)

// failFirst makes g's next n Appends fail with err, and reports (on the
// channel it returns) each failure as it happens.
func failFirst(g *gatedLedger, n int, err error) <-chan struct{} {
	failed := make(chan struct{}, n)
	left := n
	g.mu.Lock()
	g.failIf = func([]store.Record) error {
		if left == 0 {
			return nil
		}
		left--
		failed <- struct{}{}
		return err
	}
	g.mu.Unlock()
	return failed
}

// records returns the ledger's records.
func records(t *testing.T, l *Ledger) []Record {
	t.Helper()
	var out []Record
	if err := l.Records(context.Background(), time.Time{}, time.Time{}, func(r Record) error {
		out = append(out, r)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// settleOn admits a request on an engine on l and settles rec durably,
// waiting at most wait, as the proxy does at an answer's end.
func settleOn(t *testing.T, l *Ledger, rec Record, wait time.Duration) (Record, error) {
	t.Helper()
	r, aerr := NewEngine(mustPrices(t, testPrices), l, nil).Admit(context.Background(),
		Subject{User: "alice", KeyID: "key_1"}, "claude-x", Usage{Input: 1000})
	if aerr != nil {
		t.Fatal(aerr)
	}
	return r.SettleDurable(context.Background(), rec, wait)
}

// TestSettleDurableWaitsForRetry checks that an answer whose record's
// first writes failed waits for the writer's retry, within its wait,
// instead of being told the failure at once (issue #30: during a 0.3 s
// restart of PostgreSQL, streams got ledger_unavailable within 0.1 s,
// though the README promises 10 s, and their records were billed as ok
// all the same). The record is written once, as settled.
func TestSettleDurableWaitsForRetry(t *testing.T) {
	l, g := newGatedLedger(t, false)
	l.SetCommitInterval(0)
	failed := failFirst(g, 1, errors.New("database restarting"))
	if _, err := settleOn(t, l, Record{ID: "r1", Outcome: OutcomeOK, Usage: Usage{Input: 1000, Output: 50}}, 10*time.Second); err != nil {
		t.Fatalf("an answer whose record's first write failed got %v, want it written by a retry within the wait", err)
	}
	if len(failed) != 1 || !g.isDurable("r1") {
		t.Fatalf("%d failed appends, r1 durable %v; want a failure, then r1 written", len(failed), g.isDurable("r1"))
	}
	if err := l.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	recs := records(t, l)
	if len(recs) != 1 || recs[0].Outcome != OutcomeOK || recs[0].Cost == 0 {
		t.Errorf("records %+v, want r1 once, ok and billed", recs)
	}
}

// TestSettleDurableWithheldNotBilled checks that an answer whose wait ends
// before the storage takes its record gets an error (its client gets
// ledger_unavailable instead of the answer's end) and that the record,
// written later, is not billed as answered: outcome withheld, cost zero,
// usage kept. Before, it was written as ok and billed, so a client that
// retried paid twice.
func TestSettleDurableWithheldNotBilled(t *testing.T) {
	l, g := newGatedLedger(t, false)
	l.SetCommitInterval(0)
	failFirst(g, 1000, errors.New("database down"))
	got, err := settleOn(t, l, Record{ID: "r1", Outcome: OutcomeOK, Usage: Usage{Input: 1000, Output: 50}}, 100*time.Millisecond)
	if err == nil {
		t.Fatal("an answer whose record the storage refuses was released")
	}
	if got.Outcome != OutcomeWithheld || got.Cost != 0 {
		t.Errorf("SettleDurable returned %+v with its error, want the withheld record that is written (logs and metrics use it)", got)
	}
	g.mu.Lock()
	g.failIf = nil
	g.mu.Unlock()
	for !g.isDurable("r1") { // written by a retry of the writer
		if err := l.Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	recs := records(t, l)
	if len(recs) != 1 {
		t.Fatalf("%d records, want r1 once", len(recs))
	}
	if r := recs[0]; r.Outcome != OutcomeWithheld || r.Cost != 0 || r.Usage.Input != 1000 || r.Usage.Output != 50 ||
		r.Currency != "USD" {
		t.Errorf("withheld answer recorded as %+v, want outcome withheld, cost 0, usage and currency kept", r)
	}
	if !Unbilled(recs[0].Outcome) {
		t.Error("outcome withheld is billed")
	}
}

// blipStore is a PostgreSQL ledger whose first write is preceded by a
// restart-like blip: every other connection of the database is
// terminated, as a server restart does, so that the write fails on a dead
// connection of the pool.
type blipStore struct {
	store.Ledger
	ds     store.DeferredSync
	admin  *pgx.Conn
	once   sync.Once
	failed atomic.Int64
}

func (b *blipStore) blip(ctx context.Context) {
	b.once.Do(func() {
		_, _ = b.admin.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
			WHERE datname = current_database() AND pid <> pg_backend_pid()`)
	})
}

func (b *blipStore) Write(ctx context.Context, recs []store.Record) error {
	b.blip(ctx)
	err := b.ds.Write(ctx, recs)
	if err != nil {
		b.failed.Add(1)
	}
	return err
}

func (b *blipStore) Append(ctx context.Context, recs []store.Record) error {
	b.blip(ctx)
	err := b.Ledger.Append(ctx, recs)
	if err != nil {
		b.failed.Add(1)
	}
	return err
}

func (b *blipStore) Sync(ctx context.Context) error { return b.ds.Sync(ctx) }

// TestSettleDurablePostgresBlip checks the commit-group fix on a real
// PostgreSQL (issue #30): a record whose write fails because the
// database's connections went away, as in a restart, is written by the
// writer's retry while its answer waits, and is billed once, as answered.
func TestSettleDurablePostgresBlip(t *testing.T) {
	for _, mode := range []Durability{DurabilityJournaled, DurabilityStrict} {
		t.Run(mode.String(), func(t *testing.T) { testPostgresBlip(t, mode) })
	}
}

func testPostgresBlip(t *testing.T, mode Durability) {
	ctx := context.Background()
	dsn := pgtest.DSN(t)
	db, err := postgres.Open(ctx, postgres.Options{DSN: dsn, Retention: 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	admin, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = admin.Close(ctx) })
	repos := db.Repos()
	// Warm the pool: the blip kills connections it holds.
	warm := testRecord("warm", 1)
	if err := repos.Ledger.Append(ctx, []store.Record{warm.toStore()}); err != nil {
		t.Fatal(err)
	}
	bs := &blipStore{Ledger: repos.Ledger, ds: repos.Ledger.(store.DeferredSync), admin: admin}
	l := NewLedger(bs, repos.Intents, nil)
	t.Cleanup(func() { _ = l.Close() })
	l.SetDurability(mode)
	l.SetCommitInterval(0)
	got, err := settleOn(t, l, Record{ID: "r1", Outcome: OutcomeOK, Usage: Usage{Input: 1000, Output: 50}}, 10*time.Second)
	if err != nil {
		t.Fatalf("an answer whose record's write met a database blip got %v, want it written by a retry within 10 s", err)
	}
	if bs.failed.Load() == 0 {
		t.Fatal("the blip did not fail the first write: the test did not test the retry")
	}
	if err := l.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	rec, err := l.Get(ctx, "r1")
	if err != nil || rec.Outcome != OutcomeOK || rec.Cost == 0 || rec.Cost != got.Cost {
		t.Errorf("record %+v, %v; want r1 stored once, ok, billed %v", rec, err, got.Cost)
	}
}
