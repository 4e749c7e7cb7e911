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

// TestJournaledRecordsTakenOver: an instance that dies between the
// journal write of its answers' records (ledger_durability journaled)
// and their Sync leaves them in the journal; the instance that takes over
// writes them to the ledger as they were, counted once, and reports only
// the requests that had no record as interrupted.
func TestJournaledRecordsTakenOver(t *testing.T) {
	ctx := context.Background()
	dbs := instances(t, 2)
	dead, alive := dbs[0], dbs[1]
	in := dead.Repos().Intents
	for _, id := range []string{"done", "twice", "flying"} {
		if err := in.Add(rec(id, 0)); err != nil {
			t.Fatal(err)
		}
	}
	l := dead.Repos().Ledger.(*Ledger)
	if err := l.Write(ctx, []store.Record{rec("done", 70)}); err != nil {
		t.Fatal(err)
	}
	if err := l.Write(ctx, []store.Record{rec("twice", 5), rec("twice", 5)}); err != nil {
		t.Fatal(err)
	}
	dead.intents.close()
	dead.stop()
	<-dead.done
	if _, err := dead.pool.Exec(ctx, `UPDATE air_instances SET expires = now() - interval '1s' WHERE id = $1`, dead.instance); err != nil {
		t.Fatal(err)
	}
	got, err := alive.Repos().Intents.Interrupted(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].ID != "flying" {
		t.Errorf("interrupted %+v, want only the request without a record", got)
	}
	r, err := alive.Repos().Ledger.Get(ctx, "done")
	if err != nil || r.Outcome != "ok" || r.Cost != 70 {
		t.Errorf("the journaled record in the ledger: %+v, %v; want it as written (ok, cost 70)", r, err)
	}
	var tot store.Totals
	if err := alive.Repos().Ledger.Usage(ctx, store.UsageFilter{}, func(a store.Aggregate) error { tot.Merge(&a.Totals); return nil }); err != nil {
		t.Fatal(err)
	}
	if tot.Requests != 2 || tot.Cost != 75 {
		t.Errorf("totals %+v, want the 2 journaled records counted once (cost 75)", tot)
	}
	var left int
	if err := alive.pool.QueryRow(ctx, `SELECT count(*) FROM air_intents WHERE record ? 'Journaled'`).Scan(&left); err != nil || left != 0 {
		t.Errorf("%d journaled rows left after the takeover (%v), want 0", left, err)
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
