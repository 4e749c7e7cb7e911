package storetest

import (
	"context"
	"errors"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/caddy-air/caddy-air/store"
)

// RunBudgets checks store.Budgets: limits round trip, leases granted up to
// the room left by spend and other leases, never more under concurrency,
// freed by Release and by expiry, extended by Extend.
func RunBudgets(t *testing.T, b Backend) {
	ctx := context.Background()
	h := b.open(t)
	bud := h.r.Budgets
	alice := store.Subject{Scope: store.ScopeUser, ID: "alice"}
	key := store.Subject{Scope: store.ScopeKey, ID: "key_1"}
	free := store.Subject{Scope: store.ScopeUser, ID: "free"}
	must(t, bud.SetLimits(ctx, alice, store.Limits{Currency: "USD", Monthly: 1000, Total: 5000, RPM: 60, TPM: 1000, MaxParallel: 4}))
	must(t, bud.SetLimits(ctx, key, store.Limits{Total: 300}))
	must(t, bud.SetLimits(ctx, free, store.Limits{RPM: 5}))
	must(t, bud.SetLimits(ctx, key, store.Limits{Total: 400})) // replaces
	got := map[store.Subject]store.Limits{}
	must(t, bud.Limits(ctx, func(s store.Subject, l store.Limits) error { got[s] = l; return nil }))
	want := map[store.Subject]store.Limits{
		alice: {Currency: "USD", Monthly: 1000, Total: 5000, RPM: 60, TPM: 1000, MaxParallel: 4},
		key:   {Total: 400},
		free:  {RPM: 5},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Limits = %v, want %v", got, want)
	}

	now := time.Now()
	// Spend recorded by the ledger narrows the room.
	spent := store.Record{ID: "r1", Time: now.UTC(), User: "alice", KeyID: "key_1", Model: "m", Priced: true, Currency: "USD", Cost: 100}
	must(t, h.r.Ledger.Append(ctx, []store.Record{spent}))
	must(t, h.r.Ledger.Flush(ctx))

	type step struct {
		s        store.Subject
		currency string
		want     int64
		granted  int64
	}
	var leases []store.Lease
	for i, st := range []step{
		{alice, "USD", 500, 500},        // room 1000-100
		{alice, "USD", 500, 400},        // what is left of the month
		{alice, "USD", 10, 0},           // spent
		{alice, "CNY", 10, 10},          // no limit in CNY
		{key, "USD", 1000, 300},         // 400 total - 100 spent; "" currency applies
		{free, "USD", 1 << 40, 1 << 40}, // no spend limit
		{alice, "USD", -5, 0},
	} {
		l, err := bud.Reserve(ctx, st.s, st.currency, st.want, now, time.Minute)
		if err != nil || l.Amount != st.granted {
			t.Fatalf("Test %d: Reserve(%v, %s, %d) = %+v, %v; want %d granted", i, st.s, st.currency, st.want, l, err, st.granted)
		}
		if l.Amount > 0 && (l.ID == "" || !l.Expires.Equal(now.Add(time.Minute))) {
			t.Errorf("Test %d: lease %+v", i, l)
		}
		leases = append(leases, l)
	}
	if r, err := bud.Reserved(ctx, alice, "USD", now); err != nil || r != 900 {
		t.Errorf("Reserved = %d, %v; want 900", r, err)
	}
	// Release frees the room; releasing again is no error.
	must(t, bud.Release(ctx, leases[0].ID))
	must(t, bud.Release(ctx, leases[0].ID))
	if l, err := bud.Reserve(ctx, alice, "USD", 1000, now, time.Minute); err != nil || l.Amount != 500 {
		t.Errorf("Reserve after Release = %+v, %v; want 500", l, err)
	}
	// A lease stops counting once expired: an instance that died frees
	// its reservations.
	later := now.Add(2 * time.Minute)
	if r, err := bud.Reserved(ctx, alice, "USD", later); err != nil || r != 0 {
		t.Errorf("Reserved after the leases expired = %d, %v; want 0", r, err)
	}
	if l, err := bud.Reserve(ctx, alice, "USD", 2000, later, time.Minute); err != nil || l.Amount != 900 {
		t.Errorf("Reserve after expiry = %+v, %v; want 900", l, err)
	}
	// Extend keeps a lease counting.
	l, err := bud.Reserve(ctx, key, "USD", 50, now, time.Minute)
	if err != nil || l.Amount != 0 {
		t.Fatalf("key: Reserve = %+v, %v; want 0 (spent)", l, err)
	}
	must(t, bud.Release(ctx, leases[4].ID))
	l, err = bud.Reserve(ctx, key, "USD", 50, now, time.Minute)
	must(t, err)
	must(t, bud.Extend(ctx, l.ID, now.Add(time.Hour)))
	if r, err := bud.Reserved(ctx, key, "USD", later); err != nil || r != 50 {
		t.Errorf("Reserved of an extended lease = %d, %v; want 50", r, err)
	}
	if err := bud.Extend(ctx, "no-such-lease", now.Add(time.Hour)); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Extend(unknown) = %v, want ErrNotFound", err)
	}
	// Shrink gives a lease's unused part back at once, keeps its expiry,
	// and never grows it.
	room := func() int64 {
		t.Helper()
		got, err := bud.Reserve(ctx, key, "USD", 1_000_000, now, time.Minute)
		must(t, err)
		must(t, bud.Release(ctx, got.ID))
		return got.Amount
	}
	before := room()
	must(t, bud.Shrink(ctx, l.ID, 20))
	must(t, bud.Shrink(ctx, l.ID, 30))
	if r, err := bud.Reserved(ctx, key, "USD", later); err != nil || r != 20 {
		t.Errorf("Reserved of a lease shrunk to 20 = %d, %v; want 20", r, err)
	}
	if after := room(); after != before+30 {
		t.Errorf("room after Shrink = %d, want %d + the 30 given back", after, before)
	}
	must(t, bud.Shrink(ctx, l.ID, -5))
	if r, err := bud.Reserved(ctx, key, "USD", later); err != nil || r != 0 {
		t.Errorf("Reserved of a lease shrunk below zero = %d, %v; want 0", r, err)
	}
	must(t, bud.Shrink(ctx, "no-such-lease", 0))
	must(t, bud.DeleteLimits(ctx, free))
	must(t, bud.DeleteLimits(ctx, free))
	got = map[store.Subject]store.Limits{}
	must(t, bud.Limits(ctx, func(s store.Subject, l store.Limits) error { got[s] = l; return nil }))
	if _, ok := got[free]; ok || len(got) != 2 {
		t.Errorf("Limits after DeleteLimits = %v", got)
	}
	t.Run("other currencies count at their rates", func(t *testing.T) { reserveWithRates(t, h, bud) })
	t.Run("concurrent reserves never overgrant", func(t *testing.T) { concurrentReserves(t, bud) })
}

// reserveWithRates checks that Reserve counts a subject's spend in other
// currencies converted by the rates it is given, rounded up.
func reserveWithRates(t *testing.T, h *holder, bud store.Budgets) {
	ctx := context.Background()
	s := store.Subject{Scope: store.ScopeUser, ID: "rated"}
	must(t, bud.SetLimits(ctx, s, store.Limits{Currency: "USD", Total: 1000}))
	now := time.Now()
	must(t, h.r.Ledger.Append(ctx, []store.Record{
		{ID: "rated-1", Time: now.UTC(), User: "rated", Model: "m", Priced: true, Currency: "CNY", Cost: 1001},
		{ID: "rated-2", Time: now.UTC(), User: "rated", Model: "m", Priced: true, Currency: "EUR", Cost: 100},
	}))
	must(t, h.r.Ledger.Flush(ctx))
	// 1001 CNY × 0.14 = 140.14 → 141; EUR has no rate given: not counted.
	l, err := bud.Reserve(ctx, s, "USD", 5000, now, time.Minute, store.Rate{Currency: "CNY", Num: "14", Den: "100"})
	if err != nil || l.Amount != 1000-141 {
		t.Errorf("Reserve with a CNY rate = %+v, %v; want %d", l, err, 1000-141)
	}
	if l.ID != "" {
		must(t, bud.Release(ctx, l.ID))
	}
	if _, err := bud.Reserve(ctx, s, "USD", 5, now, time.Minute, store.Rate{Currency: "CNY", Num: "x", Den: "1"}); err == nil {
		t.Error("Reserve with a malformed rate succeeded")
	}
}

// concurrentReserves races reservations on one budget and checks that
// they never grant more than the limit together.
func concurrentReserves(t *testing.T, bud store.Budgets) {
	ctx := context.Background()
	s := store.Subject{Scope: store.ScopeUser, ID: "racer"}
	must(t, bud.SetLimits(ctx, s, store.Limits{Currency: "USD", Total: 1000}))
	now := time.Now()
	var mu sync.Mutex
	var total int64
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 10 {
				l, err := bud.Reserve(ctx, s, "USD", 7, now, time.Minute)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				total += l.Amount
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if total != 1000 {
		t.Errorf("160 concurrent reserves of 7 on a budget of 1000 granted %d, want exactly 1000", total)
	}
}

// RunRateLimits checks store.RateLimits: a full bucket, waits that say
// when units return, refills over the window and Adjust.
func RunRateLimits(t *testing.T, b Backend) {
	ctx := context.Background()
	rl := b.open(t).r.RateLimits
	now := time.Now()
	const limit = 60
	for i := range limit {
		if w, err := rl.Take(ctx, "k", 1, limit, time.Minute, now); err != nil || w != 0 {
			t.Fatalf("Take %d of a full bucket = %v, %v", i, w, err)
		}
	}
	w, err := rl.Take(ctx, "k", 1, limit, time.Minute, now)
	if err != nil || w <= 0 || w > time.Second+time.Millisecond {
		t.Errorf("Take of an empty bucket = %v, %v; want about 1 s", w, err)
	}
	if w, _ := rl.Take(ctx, "other", 1, limit, time.Minute, now); w != 0 {
		t.Errorf("another bucket waits %v", w)
	}
	if w, _ := rl.Take(ctx, "k", 1, limit, time.Minute, now.Add(time.Second)); w != 0 {
		t.Errorf("after 1 s the bucket still waits %v", w)
	}
	// Adjust takes units (usage beyond an estimate) and gives them back.
	must(t, rl.Adjust(ctx, "k", -30, limit, time.Minute, now.Add(time.Second)))
	if w, _ := rl.Take(ctx, "k", 1, limit, time.Minute, now.Add(2*time.Second)); w < 20*time.Second {
		t.Errorf("after Adjust(-30) the wait is %v, want about 30 s", w)
	}
	must(t, rl.Adjust(ctx, "k", 1000, limit, time.Minute, now.Add(2*time.Second)))
	for i := range limit {
		if w, _ := rl.Take(ctx, "k", 1, limit, time.Minute, now.Add(2*time.Second)); w != 0 {
			t.Fatalf("Take %d after Adjust filled the bucket waits %v", i, w)
		}
	}
	if w, _ := rl.Take(ctx, "k", 1, limit, time.Minute, now.Add(2*time.Second)); w == 0 {
		t.Error("Adjust filled the bucket beyond its limit")
	}
}
