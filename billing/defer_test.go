package billing

import (
	"context"
	"testing"

	"github.com/caddy-air/caddy-air/store/badger"
)

// bgEstimate is a background response's estimate: $1.503 of claude-x.
var bgEstimate = Usage{Input: 1000, Output: 100_000}

// TestDeferHoldsABackgroundResponse holds a background response's
// reservation after its create answered (Defer): a key with less left
// than one reservation is refused a second response while the first
// runs, and the charge replaces the hold.
func TestDeferHoldsABackgroundResponse(t *testing.T) {
	ctx := context.Background()
	te := newTestEngine(t)
	s := Subject{User: "alice", KeyID: "key_1"}
	if err := te.Budgets().SetLimits(ctx, ScopeKey, "key_1", Limits{Total: 1_000_000_000}); err != nil {
		t.Fatal(err)
	}
	res, aerr := te.Admit(ctx, s, "claude-x", bgEstimate)
	if aerr != nil {
		t.Fatalf("first response: %v", aerr)
	}
	if err := res.Intend(Record{ID: "req_bg", Endpoint: EndpointResponses}); err != nil {
		t.Fatal(err)
	}
	res.Defer()
	if _, aerr := te.Admit(ctx, s, "claude-x", bgEstimate); code(aerr) != "insufficient_quota" {
		t.Fatalf("second response while the first runs: %+v, want insufficient_quota", aerr)
	}
	rec, fresh, err := res.ChargeWith(ctx, nil, Record{ID: "req_bg", Endpoint: EndpointResponses,
		Source: SourceReported, Outcome: OutcomeOK, Usage: Usage{Input: 1000, Output: 10}})
	if err != nil || !fresh || rec.Cost == 0 {
		t.Fatalf("charge = %+v, %v, %v", rec, fresh, err)
	}
	if got := usdOf(te.Budgets().Status(ScopeKey, "key_1")); got.Reserved != 0 || got.Total != rec.Cost {
		t.Errorf("after the charge: %+v, want nothing reserved and %d spent", got, rec.Cost)
	}
}

// TestDeferLeavesNoIntent kills the gateway while a background response
// runs: a deferred reservation left no intent, so no interrupted record
// takes the id its response is billed under after the restart; the
// intent of one not deferred is recorded.
func TestDeferLeavesNoIntent(t *testing.T) {
	ctx := context.Background()
	for _, tt := range []struct {
		name     string
		deferred bool
		want     int
	}{
		{"deferred", true, 0},
		{"not deferred", false, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, dir := openStore(t), t.TempDir()
			b, err := NewBudgets(ctx, badger.NewBudgets(s))
			if err != nil {
				t.Fatal(err)
			}
			l := newLedgerIn(t, s, dir, 0)
			res, aerr := NewEngine(mustPrices(t, testPrices), l, b).Admit(ctx, Subject{KeyID: "key_1"}, "claude-x", bgEstimate)
			if aerr != nil {
				t.Fatal(aerr)
			}
			if err := res.Intend(Record{ID: "req_bg", Endpoint: EndpointResponses}); err != nil {
				t.Fatal(err)
			}
			if tt.deferred {
				res.Defer()
			}
			if err := l.Flush(ctx); err != nil {
				t.Fatal(err)
			}
			closeLedger(l) // killed while the response runs
			l = newLedgerIn(t, s, dir, 0)
			n, err := l.SettleInterrupted(ctx, func(r Record) Record { return r })
			if err != nil || n != tt.want {
				t.Errorf("SettleInterrupted after the restart = %d, %v; want %d", n, err, tt.want)
			}
			closeLedger(l)
		})
	}
}
