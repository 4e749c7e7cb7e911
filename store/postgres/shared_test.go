package postgres

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caddy-air/caddy-air/internal/pgtest"
	"github.com/caddy-air/caddy-air/store"
)

// instances opens n backends ("gateway instances") on one fresh database.
func instances(t *testing.T, n int) []*DB {
	t.Helper()
	dsn := pgtest.DSN(t)
	out := make([]*DB, n)
	for i := range out {
		db, err := Open(context.Background(), Options{DSN: dsn, Retention: 24 * time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = db.Close() })
		out[i] = db
	}
	return out
}

func rec(id string, cost int64) store.Record {
	return store.Record{ID: id, Time: time.Now().UTC(), Endpoint: "chat", User: "alice", KeyID: "k1", Model: "gpt",
		Provider: "openai", Usage: store.Usage{Input: 10, Output: 5}, Source: "upstream", Status: 200, Outcome: "ok",
		Tier: -1, Priced: true, Currency: "USD", Cost: cost}
}

// TestLedgerIdempotentAcrossInstances sends the same batches through two
// instances at once, repeatedly: every record is stored once and counted
// once in the aggregates and the spend counters.
func TestLedgerIdempotentAcrossInstances(t *testing.T) {
	ctx := context.Background()
	dbs := instances(t, 2)
	const batches, perBatch = 20, 10
	var wg sync.WaitGroup
	errs := make(chan error, 4*batches)
	for _, db := range dbs {
		for range 2 {
			l := db.Repos().Ledger
			wg.Add(1)
			go func() {
				defer wg.Done()
				for b := range batches {
					recs := make([]store.Record, perBatch)
					for i := range recs {
						recs[i] = rec(fmt.Sprintf("r%d-%d", b, i), 1000)
					}
					if err := l.Append(ctx, recs); err != nil {
						errs <- err
					}
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("append: %v", err)
	}
	l := dbs[1].Repos().Ledger
	var n int
	if err := l.Records(ctx, time.Time{}, time.Time{}, func(store.Record) error { n++; return nil }); err != nil {
		t.Fatal(err)
	}
	if n != batches*perBatch {
		t.Errorf("%d records stored, want %d", n, batches*perBatch)
	}
	var total store.Totals
	if err := l.Usage(ctx, store.UsageFilter{User: "alice"}, func(a store.Aggregate) error { total.Merge(&a.Totals); return nil }); err != nil {
		t.Fatal(err)
	}
	if total.Requests != batches*perBatch || total.Cost != batches*perBatch*1000 || total.Usage.Input != batches*perBatch*10 {
		t.Errorf("aggregates count %d requests costing %d with %d input tokens, want %d, %d, %d",
			total.Requests, total.Cost, total.Usage.Input, batches*perBatch, batches*perBatch*1000, batches*perBatch*10)
	}
	if total.Outcomes["ok"] != batches*perBatch || total.Sources["upstream"] != batches*perBatch {
		t.Errorf("outcome and source counts %v %v", total.Outcomes, total.Sources)
	}
	spend := map[string]int64{}
	if err := dbs[0].Repos().Budgets.Spend(ctx, func(s store.Spend) error {
		spend[string(s.Scope)+"/"+s.ID+"/"+s.Period] = s.Amount
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	month := store.MonthOf(time.Now())
	for _, k := range []string{"user/alice/total", "user/alice/" + month, "key/k1/total", "key/k1/" + month} {
		if spend[k] != batches*perBatch*1000 {
			t.Errorf("spend %s = %d, want %d", k, spend[k], batches*perBatch*1000)
		}
	}
	isNew, err := l.Insert(ctx, rec("r0-0", 1000))
	if err != nil || isNew {
		t.Errorf("Insert of a stored id: new = %t, err = %v", isNew, err)
	}
	isNew, err = l.Insert(ctx, rec("task-1", 5))
	if err != nil || !isNew {
		t.Errorf("Insert of a new id: new = %t, err = %v", isNew, err)
	}
	got, err := dbs[0].Repos().Ledger.Get(ctx, "task-1")
	if err != nil || got.Cost != 5 || got.Tier != -1 || got.Outcome != "ok" {
		t.Errorf("Get = %+v, %v", got, err)
	}
}

// TestRevocationReachesOtherInstances revokes a key on one instance and
// expects the other to hear of it within a second.
func TestRevocationReachesOtherInstances(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dbs := instances(t, 2)
	a, b := dbs[0].Repos().Keys, dbs[1].Repos().Keys
	heard := make(chan string, 4)
	b.Revocations(ctx, func(h string) { heard <- h })
	if err := a.Create(ctx, store.Key{ID: "k1", Hash: "h1", User: "u", CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if err := a.Create(ctx, store.Key{ID: "k1", Hash: "h2", User: "u", CreatedAt: time.Now()}); !errors.Is(err, store.ErrExists) {
		t.Errorf("a taken id: %v, want ErrExists", err)
	}
	// Created on A, found on B at once.
	if k, err := b.ByHash(ctx, "h1"); err != nil || k.ID != "k1" {
		t.Fatalf("B does not find A's key: %+v %v", k, err)
	}
	start := time.Now()
	if _, err := a.Revoke(ctx, "k1", start); err != nil {
		t.Fatal(err)
	}
	select {
	case h := <-heard:
		if h != "h1" {
			t.Errorf("B heard of %q, want h1", h)
		}
	case <-time.After(5 * time.Second):
		// Loopback delivers in milliseconds; the margin is for a loaded CI.
		t.Fatal("B did not hear of the revocation within 5s")
	}
	// A second revocation changes nothing and is not broadcast.
	k, err := a.Revoke(ctx, "k1", start.Add(time.Hour))
	if err != nil || k.RevokedAt == nil || !k.RevokedAt.Equal(start.Truncate(time.Microsecond)) {
		t.Errorf("second revoke: %+v %v", k, err)
	}
	select {
	case h := <-heard:
		t.Errorf("a repeated revocation was broadcast: %s", h)
	case <-time.After(200 * time.Millisecond):
	}
}

// TestReserveNeverGrantsBeyondTheBudget races reservations from three
// instances on one budget: together they never get more than the room.
func TestReserveNeverGrantsBeyondTheBudget(t *testing.T) {
	ctx := context.Background()
	dbs := instances(t, 3)
	sub := store.Subject{Scope: store.ScopeUser, ID: "alice"}
	if err := dbs[0].Repos().Budgets.SetLimits(ctx, sub, store.Limits{Currency: "USD", Monthly: 10_000, Total: 50_000}); err != nil {
		t.Fatal(err)
	}
	if err := dbs[0].Repos().Ledger.Append(ctx, []store.Record{rec("spent", 3_000)}); err != nil {
		t.Fatal(err)
	}
	var granted atomic.Int64
	var wg sync.WaitGroup
	now := time.Now()
	start := make(chan struct{})
	for _, db := range dbs {
		for range 8 {
			b := db.Repos().Budgets
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				for range 3 {
					l, err := b.Reserve(ctx, sub, "USD", 700, now, time.Minute)
					if err != nil {
						t.Error(err)
						return
					}
					granted.Add(l.Amount)
				}
			}()
		}
	}
	close(start)
	wg.Wait()
	if got := granted.Load(); got != 7_000 {
		t.Errorf("granted %d in all, want the room of 7000", got)
	}
	reserved, err := dbs[1].Repos().Budgets.Reserved(ctx, sub, "USD", now)
	if err != nil || reserved != 7_000 {
		t.Errorf("Reserved = %d, %v", reserved, err)
	}
	// Leases of a dead instance stop counting once they expire.
	later := now.Add(2 * time.Minute)
	l, err := dbs[2].Repos().Budgets.Reserve(ctx, sub, "USD", 10_000, later, time.Minute)
	if err != nil || l.Amount != 7_000 {
		t.Errorf("after the leases expired: granted %d, %v; want 7000", l.Amount, err)
	}
	if err := dbs[2].Repos().Budgets.Release(ctx, l.ID); err != nil {
		t.Fatal(err)
	}
	// No limit in the currency: the want is granted.
	if l, err := dbs[2].Repos().Budgets.Reserve(ctx, sub, "EUR", 1e9, now, time.Minute); err != nil || l.Amount != 1e9 {
		t.Errorf("another currency: %d, %v", l.Amount, err)
	}
}

// TestClaimsAcrossInstances claims due tasks from three instances at once:
// each task goes to exactly one, and after the lease another takes it.
func TestClaimsAcrossInstances(t *testing.T) {
	ctx := context.Background()
	dbs := instances(t, 3)
	now := time.Now().UTC()
	const tasks = 30
	for i := range tasks {
		err := dbs[0].Repos().Tasks.Insert(ctx, store.TaskRecord{ID: fmt.Sprintf("t%02d", i), User: "u", Created: now.Add(time.Duration(i) * time.Millisecond),
			Expires: now.Add(time.Hour), Working: true, Due: now, Data: []byte(`{}`)})
		if err != nil {
			t.Fatal(err)
		}
	}
	owner := raceClaims(t, "task", len(dbs), func(i int) ([]string, error) {
		got, err := dbs[i].Repos().Tasks.ClaimDue(ctx, now, time.Minute, 4)
		ids := make([]string, len(got))
		for k, tr := range got {
			ids[k] = tr.ID
		}
		return ids, err
	})
	if len(owner) != tasks {
		t.Errorf("%d tasks claimed, want %d", len(owner), tasks)
	}
	// The lease ended: another instance takes the tasks over.
	got, err := dbs[1].Repos().Tasks.ClaimDue(ctx, now.Add(2*time.Minute), time.Minute, 100)
	if err != nil || len(got) != tasks {
		t.Errorf("takeover after the lease claimed %d tasks (%v), want %d", len(got), err, tasks)
	}
	list, err := dbs[2].Repos().Tasks.ListByUser(ctx, "u", store.TaskCursor{}, 5)
	if err != nil || len(list) != 5 || list[0].ID != "t29" {
		t.Errorf("ListByUser: %d tasks, first %v, %v", len(list), list, err)
	}
}

// raceClaims runs claim for each of n instances at once, five times each,
// fails t if an id (of a kind of work) is claimed twice, and returns the
// instance that claimed each id.
func raceClaims(t *testing.T, kind string, n int, claim func(instance int) ([]string, error)) map[string]int {
	t.Helper()
	var mu sync.Mutex
	owner := map[string]int{}
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 5 {
				ids, err := claim(i)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				for _, id := range ids {
					if prev, ok := owner[id]; ok {
						t.Errorf("%s %s claimed by instance %d and %d within a lease", kind, id, prev, i)
					}
					owner[id] = i
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return owner
}

// TestResponseClaimsAcrossInstances: pending background responses
// claimed by three instances at once are each claimed by exactly one
// within a lease, and taken over by another after it.
func TestResponseClaimsAcrossInstances(t *testing.T) {
	ctx := context.Background()
	dbs := instances(t, 3)
	now := time.Now().UTC()
	const n = 30
	for i := range n {
		if err := dbs[0].Repos().Responses.PutPending(ctx, fmt.Sprintf("resp_%02d", i), []byte(`{}`), time.Hour, now); err != nil {
			t.Fatal(err)
		}
	}
	owner := raceClaims(t, "response", len(dbs), func(i int) ([]string, error) {
		got, err := dbs[i].Repos().Responses.ClaimDue(ctx, now, time.Minute, 4)
		ids := make([]string, len(got))
		for k, p := range got {
			ids[k] = p.ID
		}
		return ids, err
	})
	if len(owner) != n {
		t.Errorf("%d responses claimed, want %d", len(owner), n)
	}
	got, err := dbs[1].Repos().Responses.ClaimDue(ctx, now.Add(2*time.Minute), time.Minute, 100)
	if err != nil || len(got) != n {
		t.Errorf("takeover after the lease claimed %d responses (%v), want %d", len(got), err, n)
	}
}

// TestMediaSharedAndStreamed stores a file bigger than a chunk on one
// instance and reads it, whole and by ranges, on another.
func TestMediaSharedAndStreamed(t *testing.T) {
	ctx := context.Background()
	dbs := instances(t, 2)
	data := make([]byte, 2*mediaChunkSize+12345)
	for i := range data {
		data[i] = byte(i * 7)
	}
	info, err := dbs[0].Repos().Media.Put(ctx, "m1", bytes.NewReader(data), store.MediaPut{ContentType: "video/mp4", Expires: time.Now().Add(time.Hour)})
	if err != nil || info.Size != int64(len(data)) {
		t.Fatalf("Put: %+v %v", info, err)
	}
	if _, err := dbs[0].Repos().Media.Put(ctx, "m2", bytes.NewReader(data), store.MediaPut{MaxBytes: mediaChunkSize}); !errors.Is(err, store.ErrTooLarge) {
		t.Errorf("too large: %v", err)
	}
	if _, err := dbs[1].Repos().Media.Open(ctx, "m2"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a refused file is visible: %v", err)
	}
	m, err := dbs[1].Repos().Media.Open(ctx, "m1")
	if err != nil {
		t.Fatal(err)
	}
	defer m.Content.Close()
	if m.SHA256 != info.SHA256 || m.ContentType != "video/mp4" {
		t.Errorf("metadata %+v, want %+v", m.MediaInfo, info)
	}
	whole, err := io.ReadAll(m.Content)
	if err != nil || !bytes.Equal(whole, data) {
		t.Fatalf("read back %d bytes (%v), want the %d stored", len(whole), err, len(data))
	}
	off := int64(mediaChunkSize - 10)
	if _, err := m.Content.Seek(off, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	part := make([]byte, 100)
	if _, err := io.ReadFull(m.Content, part); err != nil || !bytes.Equal(part, data[off:off+100]) {
		t.Errorf("a range across chunks differs (%v)", err)
	}
	if _, err := dbs[0].Repos().Media.Put(ctx, "old", bytes.NewReader([]byte("x")), store.MediaPut{Expires: time.Now().Add(-time.Second)}); err != nil {
		t.Fatal(err)
	}
	if _, err := dbs[1].Repos().Media.Open(ctx, "old"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("an expired file is served: %v", err)
	}
	if n, err := dbs[1].Repos().Media.Expire(ctx); err != nil || n != 1 {
		t.Errorf("Expire deleted %d (%v), want 1", n, err)
	}
}

// TestRateLimitShared takes from one bucket through two instances: the
// limit holds for both together.
func TestRateLimitShared(t *testing.T) {
	ctx := context.Background()
	dbs := instances(t, 2)
	now := time.Now()
	ok := 0
	for i := range 12 {
		wait, err := dbs[i%2].Repos().RateLimits.Take(ctx, "rpm:alice", 1, 10, time.Minute, now)
		if err != nil {
			t.Fatal(err)
		}
		if wait == 0 {
			ok++
		} else if wait > 6*time.Second+time.Millisecond || wait < 5*time.Second {
			t.Errorf("wait %v, want about 6s (one request refills in 6s)", wait)
		}
	}
	if ok != 10 {
		t.Errorf("%d of 12 requests admitted, want 10", ok)
	}
	if wait, _ := dbs[0].Repos().RateLimits.Take(ctx, "rpm:alice", 1, 10, time.Minute, now.Add(6*time.Second)); wait != 0 {
		t.Errorf("after one refill period: wait %v", wait)
	}
	// An estimate corrected downwards takes more.
	if err := dbs[1].Repos().RateLimits.Adjust(ctx, "tpm:alice", -900, 1000, time.Minute, now); err != nil {
		t.Fatal(err)
	}
	if wait, _ := dbs[0].Repos().RateLimits.Take(ctx, "tpm:alice", 200, 1000, time.Minute, now); wait == 0 {
		t.Errorf("a bucket at 100 gave 200")
	}
}

// TestProbe: the health check's write probe passes on a server that takes
// writes, and fails once the pool is closed.
func TestProbe(t *testing.T) {
	db := instances(t, 1)[0]
	if err := db.Probe(context.Background()); err != nil {
		t.Fatalf("probe of a writable server: %v", err)
	}
	db.pool.Close()
	if err := db.Probe(context.Background()); err == nil {
		t.Error("probe passed on a closed pool")
	}
}
