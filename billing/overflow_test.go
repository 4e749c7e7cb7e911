package billing

import (
	"context"
	"math"
	"testing"

	"github.com/caddy-air/caddy-air/store"
)

func TestAmountAddSat(t *testing.T) {
	for i, tc := range []struct {
		a, b, want Amount
	}{
		{1, 2, 3},
		{math.MaxInt64, 1, math.MaxInt64},
		{math.MaxInt64 - 5, math.MaxInt64, math.MaxInt64},
		{math.MinInt64, -1, math.MinInt64},
		{math.MaxInt64, math.MinInt64, -1},
		{-3, 5, 2},
	} {
		if got := tc.a.addSat(tc.b); got != tc.want {
			t.Errorf("Test %d: %d.addSat(%d) = %d, want %d", i, tc.a, tc.b, got, tc.want)
		}
	}
}

// A max_tokens of 2^63-1 quotes a cost at the top of int64. Added to what
// an account already spent or reserved, it wrapped around to a negative
// sum, and every request after it passed the spend limit; its token count
// wrapped the estimate's total, and it passed the tokens-per-minute limit.
func TestHugeEstimateKeepsLimits(t *testing.T) {
	ctx := context.Background()
	huge := Usage{Input: 10, Output: math.MaxInt64}

	t.Run("spend", func(t *testing.T) {
		te := newTestEngine(t)
		s := Subject{User: "ovf", KeyID: "key_ovf"}
		if err := te.Budgets().SetLimits(ctx, ScopeKey, "key_ovf", Limits{Monthly: claudeCost * 3}); err != nil {
			t.Fatal(err)
		}
		res, aerr := te.Admit(ctx, s, "claude-x", claudeUsage)
		if aerr != nil {
			t.Fatal(aerr)
		}
		res.Settle(Record{ID: "first", Usage: claudeUsage})
		// Under its limit, the account admits one more request, however
		// large its estimate ("overspend by at most one request").
		big, aerr := te.Admit(ctx, s, "claude-x", huge)
		if aerr != nil {
			t.Fatalf("the request under the limit: %v", aerr)
		}
		for i := range 30 {
			if _, aerr := te.Admit(ctx, s, "claude-x", claudeUsage); code(aerr) != "insufficient_quota" {
				t.Fatalf("request %d beside the huge one: %v, want insufficient_quota", i, aerr)
			}
		}
		st := te.Budgets().Status(ScopeKey, "key_ovf")
		if len(st.Spend) != 1 || st.Spend[0].Reserved != maxHoldCost {
			t.Errorf("reserved %+v, want one currency with %s", st.Spend, maxHoldCost)
		}
		big.Release()
		if _, aerr := te.Admit(ctx, s, "claude-x", claudeUsage); aerr != nil {
			t.Errorf("after the huge request released its reservation: %v", aerr)
		}
	})

	t.Run("spent", func(t *testing.T) {
		// Records an upstream's absurd usage priced at the top of int64
		// saturate the spend instead of wrapping it below the limit.
		te := newTestEngine(t)
		b := te.Budgets()
		if err := b.SetLimits(ctx, ScopeKey, "key_ovf2", Limits{Total: claudeCost * 3}); err != nil {
			t.Fatal(err)
		}
		now := te.clock.Now()
		b.mu.Lock()
		acc := b.account(subjectKey{ScopeKey, "key_ovf2"})
		for range 2 {
			acc.addSpend(&Record{Priced: true, Currency: "USD", Cost: math.MaxInt64, Time: now}, now)
		}
		b.mu.Unlock()
		if _, aerr := te.Admit(ctx, Subject{KeyID: "key_ovf2"}, "claude-x", claudeUsage); code(aerr) != "insufficient_quota" {
			t.Errorf("after spending twice the top of int64: %v, want insufficient_quota", aerr)
		}
	})

	t.Run("tpm", func(t *testing.T) {
		te := newTestEngine(t)
		s := Subject{User: "ovf3", KeyID: "key_ovf3"}
		if err := te.Budgets().SetLimits(ctx, ScopeKey, "key_ovf3", Limits{TPM: 1000}); err != nil {
			t.Fatal(err)
		}
		// A request larger than the whole limit goes when the bucket is
		// full, and empties it for the requests after it.
		if _, aerr := te.Admit(ctx, s, "claude-x", huge); aerr != nil {
			t.Fatalf("a request asking for 2^63-1 tokens on a full bucket: %v", aerr)
		}
		if _, aerr := te.Admit(ctx, s, "claude-x", claudeUsage); code(aerr) != "rate_limit_exceeded" {
			t.Errorf("the request after it: %v, want rate_limit_exceeded", aerr)
		}
	})
}

// A request that settles at a cost at the top of int64 against a shared
// budget's lease, beside another in flight, wrapped the lease's used sum
// around to a large negative one; its room then wrapped back to room left,
// and the lease admitted more requests.
func TestLeaseSumsSaturate(t *testing.T) {
	const top = math.MaxInt64
	var s slice
	l := &lease{l: store.Lease{Amount: 1000}}
	s.admit(l, 100, day0)
	s.admit(l, 600, day0)
	l.settle(top, 100)
	if l.used != top {
		t.Errorf("used = %d after a cost of %d; want it there", l.used, int64(top))
	}
	if s.fits(l, 600) || s.fits(l, 0) {
		t.Error("a lease whose request cost the largest int64 still admits requests")
	}
	// Its overage counts against the next lease too, once it is closed.
	s.closed, s.cur = []*lease{l}, &lease{l: store.Lease{Amount: 1000}}
	if s.fits(s.cur, 10) {
		t.Error("a fresh lease admits beside a closed one whose request cost the largest int64")
	}
}
