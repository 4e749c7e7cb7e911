package billing

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caddy-air/caddy-air/internal/pgtest"
	"github.com/caddy-air/caddy-air/store"
	"github.com/caddy-air/caddy-air/store/postgres"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// instance is one gateway instance's billing on a shared PostgreSQL
// database.
type instance struct {
	*Engine
	db     *postgres.DB
	stop   context.CancelFunc
	closed bool
}

// newInstances opens n instances on one fresh database, after setting the
// limits of lim (subject → limits) there.
func newInstances(t testing.TB, n int, ttl time.Duration, lim map[store.Subject]store.Limits) []*instance {
	t.Helper()
	dsn := pgtest.DSN(t)
	out := make([]*instance, n)
	for i := range out {
		db, err := postgres.Open(context.Background(), postgres.Options{DSN: dsn, Retention: 24 * time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		repos := db.Repos()
		if i == 0 {
			for s, l := range lim {
				if err := repos.Budgets.SetLimits(context.Background(), s, l); err != nil {
					t.Fatal(err)
				}
			}
		}
		b, err := NewBudgets(context.Background(), repos.Budgets)
		if err != nil {
			t.Fatal(err)
		}
		l := NewLedger(repos.Ledger, repos.Intents, nil)
		ctx, stop := context.WithCancel(context.Background())
		b.Share(ctx, SharedConfig{RateLimits: repos.RateLimits, Flush: l.Flush, LeaseTTL: ttl})
		in := &instance{Engine: NewEngine(mustPrices(t, testPrices), l, b), db: db, stop: stop}
		out[i] = in
		t.Cleanup(func() { in.close(t) })
	}
	return out
}

// close stops the instance as the gateway does: drain the ledger, then
// release the slices.
func (in *instance) close(t testing.TB) {
	if in.closed {
		return
	}
	in.closed = true
	in.stop()
	if err := in.Ledger().Close(); err != nil {
		t.Error(err)
	}
	if err := in.Budgets().Close(context.Background()); err != nil {
		t.Error(err)
	}
	_ = in.db.Close()
}

// kill stops the instance like SIGKILL would: nothing is released.
func (in *instance) kill() {
	in.closed = true
	in.stop()
	_ = in.db.Close()
}

// spent reads the all-time spend of s in USD from the database.
func spent(t *testing.T, db *postgres.DB, s store.Subject) Amount {
	t.Helper()
	var n Amount
	err := db.Repos().Budgets.Spend(context.Background(), func(sp store.Spend) error {
		if sp.Subject == s && sp.Currency == "USD" && sp.Period == store.PeriodTotal {
			n = Amount(sp.Amount)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestSharedBudgetRace races three instances spending one budget until it
// is spent: the spend ends within the documented bound (the limit plus
// what the requests in flight cost beyond their estimates), and the whole
// budget can be spent.
func TestSharedBudgetRace(t *testing.T) {
	const workers = 8 // per instance
	for _, tc := range []struct {
		name   string
		actual Usage // what each request turns out to use (estimate: claudeUsage)
		excess Amount
	}{
		{"estimates hold", claudeUsage, 0},
		{"requests cost twice their estimate", Usage{Input: 2000, Output: 200}, claudeCost},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			key := store.Subject{Scope: store.ScopeKey, ID: "key_1"}
			limit := claudeCost*100 + claudeCost/2
			// Leases of 5 s: with 1 s ones, an instance on a loaded
			// machine could miss extending a slice (every 250 ms) before
			// it expired, and the backend lent its room again while its
			// requests were in flight, which is beyond the bound (the
			// docs/operations/several-instances.md states it for leases extended
			// in time).
			ins := newInstances(t, 3, 5*time.Second, map[store.Subject]store.Limits{key: {Currency: "USD", Total: int64(limit)}})
			// The bound: the excess of the requests in flight on each
			// instance when it last admitted one, at most its most
			// requests in flight at once.
			var admitted atomic.Int64
			inflight, maxInflight := make([]atomic.Int64, len(ins)), make([]atomic.Int64, len(ins))
			var wg sync.WaitGroup
			deadline := time.Now().Add(15 * time.Second)
			for i, in := range ins {
				for range workers {
					wg.Add(1)
					go func() {
						defer wg.Done()
						refusedSince := time.Time{}
						for time.Now().Before(deadline) {
							res, aerr := in.Admit(ctx, Subject{User: "alice", KeyID: "key_1"}, "claude-x", claudeUsage)
							if aerr != nil {
								if code(aerr) != "insufficient_quota" {
									t.Errorf("refusal %v, want insufficient_quota", aerr)
									return
								}
								// Slices of other instances are released a
								// tick after their requests settle.
								if refusedSince.IsZero() {
									refusedSince = time.Now()
								} else if time.Since(refusedSince) > 3*time.Second {
									return
								}
								time.Sleep(20 * time.Millisecond)
								continue
							}
							refusedSince = time.Time{}
							n := inflight[i].Add(1)
							for m := maxInflight[i].Load(); n > m && !maxInflight[i].CompareAndSwap(m, n); m = maxInflight[i].Load() {
							}
							admitted.Add(1)
							time.Sleep(time.Millisecond)
							res.Settle(Record{Endpoint: "chat", Usage: tc.actual, Source: SourceReported, Status: 200, Outcome: OutcomeOK})
							inflight[i].Add(-1)
						}
					}()
				}
			}
			wg.Wait()
			for _, in := range ins {
				if err := in.Ledger().Flush(ctx); err != nil {
					t.Fatal(err)
				}
			}
			got := spent(t, ins[0].db, key)
			var most int64
			for i := range maxInflight {
				most += maxInflight[i].Load()
			}
			bound := limit + Amount(most)*tc.excess
			t.Logf("admitted %d, spent %s of %s (bound %s: %d in flight)", admitted.Load(), got, limit, bound, most)
			if got > bound {
				t.Errorf("spent %s, beyond the bound %s (limit %s)", got, bound, limit)
			}
			// The budget is spent, not stranded in slices: less than one
			// more request would fit.
			if left := limit - got; left >= claudeCost {
				t.Errorf("spent %s of %s: %s left unspent", got, limit, left)
			}
			for i, in := range ins {
				if _, aerr := in.Admit(ctx, Subject{KeyID: "key_1"}, "claude-x", claudeUsage); code(aerr) != "insufficient_quota" {
					t.Errorf("instance %d: Admit after the budget is spent = %v, want insufficient_quota", i, aerr)
				}
			}
		})
	}
}

// TestSharedBudgetFragmentReturned checks that an instance refused near
// the end of a budget keeps none of it: the lease too small for its
// request goes back at once, so that the room left gathers in the
// backend for the next request that fits instead of lying in pieces in
// several instances' slices (which stranded the end of a budget for
// seconds).
func TestSharedBudgetFragmentReturned(t *testing.T) {
	ctx := context.Background()
	key := store.Subject{Scope: store.ScopeKey, ID: "key_1"}
	limit := 2*claudeCost + claudeCost/2 // slices of one request each
	ins := newInstances(t, 3, 30*time.Second, map[store.Subject]store.Limits{key: {Currency: "USD", Total: int64(limit)}})
	var held []*Reservation
	for _, in := range ins[:2] {
		res, aerr := in.Admit(ctx, Subject{KeyID: "key_1"}, "claude-x", claudeUsage)
		if aerr != nil {
			t.Fatal(aerr)
		}
		held = append(held, res)
	}
	if _, aerr := ins[2].Admit(ctx, Subject{KeyID: "key_1"}, "claude-x", claudeUsage); code(aerr) != "insufficient_quota" {
		t.Fatalf("third request = %v, want insufficient_quota (half a request's room is left)", aerr)
	}
	reserved, err := ins[0].db.Repos().Budgets.Reserved(ctx, key, "USD", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if want := int64(2 * claudeCost); reserved != want {
		t.Errorf("Reserved after the refusal = %d, want %d: the refused instance kept the half slice it could not use", reserved, want)
	}
	for _, res := range held {
		res.Settle(Record{Endpoint: "chat", Usage: claudeUsage, Source: SourceReported, Status: 200, Outcome: OutcomeOK})
	}
}

// TestSharedBudgetDeadInstance kills an instance that holds a slice: its
// room stays reserved until the slice's lease expires, then the others
// can spend it.
func TestSharedBudgetDeadInstance(t *testing.T) {
	ctx := context.Background()
	key := store.Subject{Scope: store.ScopeKey, ID: "key_1"}
	limit := claudeCost * 64 // slices of 2 requests
	const ttl = 3 * time.Second
	ins := newInstances(t, 2, ttl, map[store.Subject]store.Limits{key: {Currency: "USD", Total: int64(limit)}})
	dead, live := ins[0], ins[1]
	if _, aerr := dead.Admit(ctx, Subject{KeyID: "key_1"}, "claude-x", claudeUsage); aerr != nil {
		t.Fatal(aerr)
	}
	killed := time.Now()
	dead.kill()
	reserved, err := live.db.Repos().Budgets.Reserved(ctx, key, "USD", time.Now())
	if err != nil || reserved != int64(2*claudeCost) {
		t.Fatalf("Reserved after the kill = %d, %v; want the dead instance's slice, %d", reserved, err, 2*claudeCost)
	}
	spend := func(until time.Time) int {
		n := 0
		for time.Now().Before(until) {
			res, aerr := live.Admit(ctx, Subject{KeyID: "key_1"}, "claude-x", claudeUsage)
			if aerr != nil {
				time.Sleep(50 * time.Millisecond)
				continue
			}
			res.Settle(Record{Endpoint: "chat", Usage: claudeUsage, Source: SourceReported, Status: 200, Outcome: OutcomeOK})
			n++
		}
		return n
	}
	// While the dead slice's lease runs, its two requests' room is held.
	before := spend(killed.Add(ttl - 500*time.Millisecond))
	if before > 62 {
		t.Errorf("%d requests admitted while the dead instance's slice was leased, want at most 62", before)
	}
	after := spend(time.Now().Add(ttl + 2*time.Second))
	if before+after != 64 {
		t.Errorf("%d+%d requests admitted, want the whole budget's 64 once the dead slice expired", before, after)
	}
	if err := live.Ledger().Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if got := spent(t, live.db, key); got != limit {
		t.Errorf("spent %s, want the limit %s", got, limit)
	}
}

// TestSharedRateLimits bursts requests at several instances sharing an
// RPM limit: together they admit the limit, within the documented
// bound, and refuse the rest with rate_limit_exceeded and Retry-After.
func TestSharedRateLimits(t *testing.T) {
	for _, tc := range []struct {
		name      string
		rpm, tpm  int64
		instances int
		want      int64 // requests the bucket holds
	}{
		{"2 instances, 300 rpm", 300, 0, 2, 300},
		{"3 instances, 30 rpm", 30, 0, 3, 30},
		// Each request estimates claudeUsage's 1,100 tokens.
		{"2 instances, 110k tpm", 0, 110_000, 2, 100},
		{"3 instances, 50 rpm and 110k tpm", 50, 110_000, 3, 50},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			user := store.Subject{Scope: store.ScopeUser, ID: "alice"}
			ins := newInstances(t, tc.instances, 0, map[store.Subject]store.Limits{user: {RPM: tc.rpm, TPM: tc.tpm}})
			var admitted atomic.Int64
			var wg sync.WaitGroup
			start := time.Now()
			for _, in := range ins {
				for range 4 {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for range int(tc.want) {
							res, aerr := in.Admit(ctx, Subject{User: "alice", KeyID: "key_1"}, "claude-x", claudeUsage)
							if aerr != nil {
								if code(aerr) != "rate_limit_exceeded" || aerr.RetryAfter < 1 {
									t.Errorf("refusal %v (Retry-After %d), want rate_limit_exceeded with Retry-After", aerr, aerr.RetryAfter)
								}
								continue
							}
							admitted.Add(1)
							res.Settle(Record{Endpoint: "chat", Usage: claudeUsage, Source: SourceReported, Status: 200, Outcome: OutcomeOK})
						}
					}()
				}
			}
			wg.Wait()
			elapsed := time.Since(start)
			// At most the bucket plus its refill meanwhile; at least the
			// bucket minus each instance's unused batch.
			high := tc.want + int64(elapsed.Seconds()*float64(tc.want)/60) + 1
			low := tc.want - int64(tc.instances)*(tc.want/rateParts+1)
			t.Logf("admitted %d in %v", admitted.Load(), elapsed)
			if n := admitted.Load(); n > high || n < low {
				t.Errorf("admitted %d requests across %d instances, want %d to %d", n, tc.instances, low, high)
			}
		})
	}
}

// BenchmarkSettleShared is BenchmarkSettle on a PostgreSQL budget shared
// through slices: admission stays in memory, so a request costs no
// database round trip but the slice's occasional renewal and the batched
// ledger write.
func BenchmarkSettleShared(b *testing.B) {
	ctx := context.Background()
	key := store.Subject{Scope: store.ScopeKey, ID: "key_1"}
	in := newInstances(b, 1, 0, map[store.Subject]store.Limits{key: {Currency: "CNY", Monthly: 1 << 62, RPM: 1 << 39}})[0]
	s := Subject{User: "alice", KeyID: "key_1"}
	u := Usage{Input: 50_000, CacheRead: 1_000, Output: 2_000}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		res, aerr := in.Admit(ctx, s, "qwen3-max", u)
		if aerr != nil {
			b.Fatal(aerr)
		}
		res.Settle(Record{ID: "bench-" + strconv.Itoa(i), Endpoint: EndpointChat, Usage: u, Outcome: OutcomeOK})
		i++
	}
	if err := in.Ledger().Flush(ctx); err != nil {
		b.Fatal(err)
	}
}

// TestSharedLimitsReachOtherInstances sets a budget through one instance:
// another one, which started without it, enforces it within the reload
// period.
func TestSharedLimitsReachOtherInstances(t *testing.T) {
	ctx := context.Background()
	ins := newInstances(t, 2, 0, nil)
	s := Subject{KeyID: "key_2"}
	if _, aerr := ins[1].Admit(ctx, s, "claude-x", claudeUsage); aerr != nil {
		t.Fatalf("Admit without limits: %v", aerr)
	}
	// Less than one request's estimate: every request is refused.
	if err := ins[0].Budgets().SetLimits(ctx, ScopeKey, "key_2", Limits{Total: claudeCost / 2}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(limitsEvery + 2*time.Second)
	for {
		_, aerr := ins[1].Admit(ctx, s, "claude-x", claudeUsage)
		if code(aerr) == "insufficient_quota" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Admit %v after the limits were set through another instance, want insufficient_quota within %v", aerr, limitsEvery)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if lim, ok := ins[1].Budgets().Limits(ScopeKey, "key_2"); !ok || lim.Total != claudeCost/2 {
		t.Errorf("Limits on the other instance = %+v, %v", lim, ok)
	}
}

// TestSharedBudgetHeldBackShare spends a small budget from three
// instances, with requests whose estimates hold: no request is refused
// before the spend and the requests in flight come within the documented
// share of the limit (1/32 per instance, plus one request's estimate that
// did not fit), since a closed slice gives back its unused room at once
// and the rest once its records are in the spend. Before, closed slices
// counted in full for up to a second after their requests' costs were
// in the spend, and budgets refused at about half their limit.
func TestSharedBudgetHeldBackShare(t *testing.T) {
	const instances, workers = 3, 4
	ctx := context.Background()
	key := store.Subject{Scope: store.ScopeKey, ID: "key_1"}
	limit := claudeCost * 320 // slices of 10 requests
	ins := newInstances(t, instances, 5*time.Second, map[store.Subject]store.Limits{key: {Currency: "USD", Total: int64(limit)}})
	share := limit/sliceParts*instances + claudeCost
	var admitted, inflight, settled atomic.Int64
	var mu sync.Mutex
	var early []string
	var firstRefusal Amount
	var wg sync.WaitGroup
	stop := time.Now().Add(20 * time.Second)
	for _, in := range ins {
		for range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var refusedSince time.Time
				for time.Now().Before(stop) {
					// Counted before Admit: a request admitted on another
					// goroutine meanwhile counts too, never one too few.
					inflight.Add(1)
					res, aerr := in.Admit(ctx, Subject{KeyID: "key_1"}, "claude-x", claudeUsage)
					if aerr != nil {
						used := Amount(settled.Load()+inflight.Load()) * claudeCost
						inflight.Add(-1)
						mu.Lock()
						if firstRefusal == 0 || used < firstRefusal {
							firstRefusal = used
						}
						mu.Unlock()
						if used < limit-share {
							mu.Lock()
							early = append(early, fmt.Sprintf("refused at %s spent or in flight", used))
							mu.Unlock()
						}
						if refusedSince.IsZero() {
							refusedSince = time.Now()
						} else if time.Since(refusedSince) > 2*time.Second {
							return
						}
						time.Sleep(5 * time.Millisecond)
						continue
					}
					refusedSince = time.Time{}
					admitted.Add(1)
					time.Sleep(20 * time.Millisecond)
					// As the gateway's handlers: the answer ends once its
					// record is in the database.
					if _, err := res.SettleDurable(ctx, Record{Endpoint: "chat", Usage: claudeUsage, Source: SourceReported, Status: 200, Outcome: OutcomeOK}, 10*time.Second); err != nil {
						t.Error(err)
					}
					settled.Add(1)
					inflight.Add(-1)
				}
			}()
		}
	}
	wg.Wait()
	for _, in := range ins {
		if err := in.Ledger().Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	got := spent(t, ins[0].db, key)
	t.Logf("admitted %d, spent %s of %s; %d refusals before %s; first refusal at %s", admitted.Load(), got, limit, len(early), limit-share, firstRefusal)
	if len(early) > 0 {
		t.Errorf("%d refusals came more than 3/32 of the limit and one request (%s) before the limit %s: %v",
			len(early), share, limit, early[:min(len(early), 5)])
	}
	if got > limit || limit-got >= claudeCost {
		t.Errorf("spent %s of %s, want the whole budget less than one request", got, limit)
	}
}
