package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/caddy-air/caddy-air/store"
)

// TestIntentsTakenOverFromADeadInstance leaves intents on an instance that
// dies (its lease expires): another instance reports those whose records
// are not in the ledger, once.
func TestIntentsTakenOverFromADeadInstance(t *testing.T) {
	ctx := context.Background()
	dbs := instances(t, 2)
	dead, alive := dbs[0], dbs[1]
	in := dead.Repos().Intents
	for _, id := range []string{"a", "b", "c", "d"} {
		if err := in.Add(rec(id, 1)); err != nil {
			t.Fatal(err)
		}
	}
	in.Resolve([]string{"d"})
	if err := dead.Repos().Ledger.Append(ctx, []store.Record{rec("b", 1)}); err != nil {
		t.Fatal(err)
	}
	dead.intents.close() // deletes what was resolved
	dead.stop()
	<-dead.done
	if _, err := dead.pool.Exec(ctx, `UPDATE air_instances SET expires = now() - interval '1s' WHERE id = $1`, dead.instance); err != nil {
		t.Fatal(err)
	}
	got, err := alive.Repos().Intents.Interrupted(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	for _, r := range got {
		ids[r.ID] = true
	}
	if len(got) != 2 || !ids["a"] || !ids["c"] {
		t.Errorf("interrupted %v, want a and c (b is in the ledger, d resolved)", ids)
	}
	if again, err := alive.Repos().Intents.Interrupted(ctx); err != nil || len(again) != 0 {
		t.Errorf("reported twice: %d, %v", len(again), err)
	}
}

// TestSweepOneInstanceAtATime runs the retention job on two instances at
// once: one does the work, the other skips it.
func TestSweepOneInstanceAtATime(t *testing.T) {
	ctx := context.Background()
	dbs := instances(t, 2)
	old := rec("old", 1)
	old.Time = time.Now().Add(-48 * time.Hour)
	if err := dbs[0].Repos().Ledger.Append(ctx, []store.Record{old, rec("new", 1)}); err != nil {
		t.Fatal(err)
	}
	// Retention goes by when a record was written: age one.
	if _, err := dbs[0].pool.Exec(ctx, `UPDATE air_ledger SET written = now() - interval '48 hours' WHERE id = 'old'`); err != nil {
		t.Fatal(err)
	}
	tx, err := dbs[0].pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, retentionLockID); err != nil {
		t.Fatal(err)
	}
	s, err := dbs[1].Sweep(ctx, time.Now())
	if err != nil || s.Ran {
		t.Errorf("a sweep ran while another held the lock: %+v %v", s, err)
	}
	_ = tx.Rollback(ctx)
	s, err = dbs[1].Sweep(ctx, time.Now())
	if err != nil || !s.Ran || s.Records != 1 {
		t.Errorf("sweep: %+v %v, want one record deleted", s, err)
	}
}
