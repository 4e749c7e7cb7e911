package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/caddy-air/caddy-air/internal/pgtest"
)

// TestIntentCommittedWhenAddReturns adds intents from many requests at
// once: each is in the database, seen from another connection, the
// moment its Add returns (a kill -9 right then cannot lose it), and the
// requests share commits rather than pay one each.
func TestIntentCommittedWhenAddReturns(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.DSN(t)
	db, err := Open(ctx, Options{DSN: dsn})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// Another pool, as another instance would have.
	other, err := Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()

	const n = 200
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		missing []string
	)
	in := db.Repos().Intents
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := fmt.Sprintf("r%d", i)
			<-start
			if err := in.Add(rec(id, 1)); err != nil {
				t.Errorf("add %s: %v", id, err)
				return
			}
			// A row another instance sees: committed.
			var found bool
			if err := other.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM air_intents WHERE id = $1 AND instance = $2)`, id, db.instance).Scan(&found); err != nil {
				t.Error(err)
				return
			}
			if !found {
				mu.Lock()
				missing = append(missing, id)
				mu.Unlock()
			}
		}()
	}
	close(start)
	wg.Wait()
	if len(missing) > 0 {
		slices.Sort(missing)
		t.Errorf("%d intents were not committed when Add returned, e.g. %v", len(missing), missing[:min(5, len(missing))])
	}
	if c := db.intents.commits.Load(); c >= n {
		t.Errorf("%d intents took %d commits, want them grouped", n, c)
	} else {
		t.Logf("%d concurrent intents took %d commits", n, c)
	}
	var rows int
	if err := other.QueryRow(ctx, `SELECT count(*) FROM air_intents`).Scan(&rows); err != nil || rows != n {
		t.Errorf("%d intents in the table (%v), want %d", rows, err, n)
	}
}

// TestIntentResolvedBeforeItsCommit resolves an intent whose Add gave up
// before the writer took its batch: it is never written, and the other
// intents of the batch are.
func TestIntentResolvedBeforeItsCommit(t *testing.T) {
	ctx := context.Background()
	db := instances(t, 1)[0]
	in := db.intents
	// Queue a batch by hand, as Add would, without waking the writer.
	b1, _ := jsonRec("keep")
	b2, _ := jsonRec("gone")
	in.mu.Lock()
	batch := &intentBatch{ids: []string{"keep", "gone"}, recs: [][]byte{b1, b2}, committed: make(chan struct{})}
	in.next = batch
	in.mu.Unlock()
	in.Resolve([]string{"gone", "older"})
	<-batch.committed // the writer's round for the resolved intents
	if batch.err != nil {
		t.Fatal(batch.err)
	}
	var ids []string
	rows, err := db.pool.Query(ctx, `SELECT id FROM air_intents ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	ids, err = pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || !slices.Equal(ids, []string{"keep"}) {
		t.Errorf("intents %v (%v), want [keep]", ids, err)
	}
}

// jsonRec is the stored form of a test intent.
func jsonRec(id string) ([]byte, error) { return json.Marshal(rec(id, 1)) }

// TestDropResolved checks which intents of a batch are written and which
// deletions remain.
func TestDropResolved(t *testing.T) {
	for _, tc := range []struct {
		ids, resolve      []string
		wantIDs, wantGone []string
	}{
		{ids: []string{"a", "b"}, resolve: []string{"x"}, wantIDs: []string{"a", "b"}, wantGone: []string{"x"}},
		{ids: []string{"a", "b", "c"}, resolve: []string{"b", "x"}, wantIDs: []string{"a", "c"}, wantGone: []string{"x"}},
		{ids: []string{"a"}, resolve: []string{"a"}, wantIDs: []string{}, wantGone: []string{}},
	} {
		recs := make([][]byte, len(tc.ids))
		for i, id := range tc.ids {
			recs[i] = []byte(id)
		}
		ids, recs, gone := dropResolved(tc.ids, recs, tc.resolve)
		if !slices.Equal(ids, tc.wantIDs) || !slices.Equal(gone, tc.wantGone) {
			t.Errorf("dropResolved(%v, %v) = %v, %v; want %v, %v", tc.ids, tc.resolve, ids, gone, tc.wantIDs, tc.wantGone)
		}
		for i, id := range ids {
			if string(recs[i]) != id {
				t.Errorf("record %d is %q, want %q's", i, recs[i], id)
			}
		}
	}
}

// TestIntentAddFailsWithoutTheDatabase adds an intent when its commit
// cannot happen: Add returns an error (the request is refused before it
// reaches an upstream) instead of succeeding or hanging.
func TestIntentAddFailsWithoutTheDatabase(t *testing.T) {
	db := instances(t, 1)[0]
	db.pool.Close()
	done := make(chan error, 1)
	go func() { done <- db.Repos().Intents.Add(rec("lost", 1)) }()
	select {
	case err := <-done:
		if err == nil {
			t.Error("Add succeeded without a database")
		}
	case <-time.After(intentWait + commitTimeout):
		t.Error("Add did not return")
	}
}

// TestIntentResolvedOnAnIdleWriter resolves an intent when no other
// request follows: its row is deleted all the same, soon after (the
// writer's timer runs only while deletions wait).
func TestIntentResolvedOnAnIdleWriter(t *testing.T) {
	ctx := context.Background()
	db := instances(t, 1)[0]
	in := db.Repos().Intents
	if err := in.Add(rec("done", 1)); err != nil {
		t.Fatal(err)
	}
	in.Resolve([]string{"done"})
	deadline := time.Now().Add(5 * time.Second)
	for {
		var n int
		if err := db.pool.QueryRow(ctx, `SELECT count(*) FROM air_intents`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d intents left 5 s after their resolution", n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestIntentIDsOfAnyText resolves intents whose ids hold what an array
// literal must escape: each is deleted, and only those resolved.
func TestIntentIDsOfAnyText(t *testing.T) {
	ctx := context.Background()
	db := instances(t, 1)[0]
	in := db.Repos().Intents
	odd := []string{`a"b`, `c\d`, `e,f`, `{g}`, `h i`, `NULL`, "é", ""}
	for _, id := range append(odd, "kept") {
		if err := in.Add(rec(id, 1)); err != nil {
			t.Fatal(err)
		}
	}
	in.Resolve(odd)
	deadline := time.Now().Add(5 * time.Second)
	for {
		rows, err := db.pool.Query(ctx, `SELECT id FROM air_intents ORDER BY id`)
		if err != nil {
			t.Fatal(err)
		}
		left, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		if len(left) == 1 && left[0] == "kept" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("intents left 5 s after resolving %q: %q; want only \"kept\"", odd, left)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
