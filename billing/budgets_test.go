package billing

import (
	"context"
	"testing"
)

// TestReservationEnds checks what each way of ending a reservation gives
// back to the user and the key it counts against: every one drops the
// reserved cost; Settle and Charge turn it into spend; only Release gives
// back the request's slot of the rate limit.
func TestReservationEnds(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name     string
		end      func(t *testing.T, r *Reservation)
		spent    bool // the cost becomes spend
		slotBack bool // the request's rpm slot is given back
	}{
		{"Settle", func(t *testing.T, r *Reservation) { r.Settle(Record{ID: "r1", Usage: claudeUsage}) }, true, false},
		{"Charge", func(t *testing.T, r *Reservation) {
			if _, fresh, err := r.Charge(ctx, Record{ID: "r1", Usage: claudeUsage}); err != nil || !fresh {
				t.Fatalf("Charge: fresh %v, %v", fresh, err)
			}
		}, true, false},
		{"Release", func(t *testing.T, r *Reservation) { r.Release() }, false, true},
		{"ReleaseCost", func(t *testing.T, r *Reservation) { r.ReleaseCost() }, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			te := newTestEngine(t)
			b := te.Budgets()
			subjects := []struct {
				scope Scope
				id    string
			}{{ScopeUser, "alice"}, {ScopeKey, "key_1"}}
			for _, sub := range subjects {
				if err := b.SetLimits(ctx, sub.scope, sub.id, Limits{Total: claudeCost * 10, RPM: 1, TPM: 1_000_000}); err != nil {
					t.Fatal(err)
				}
			}
			s := Subject{User: "alice", KeyID: "key_1"}
			res, aerr := te.Admit(ctx, s, "claude-x", claudeUsage)
			if aerr != nil {
				t.Fatal(aerr)
			}
			usd := func(scope Scope, id string) CurrencySpend {
				for _, cs := range b.Status(scope, id).Spend {
					if cs.Currency == "USD" {
						return cs
					}
				}
				return CurrencySpend{Currency: "USD"}
			}
			for _, sub := range subjects {
				if got := usd(sub.scope, sub.id); got.Reserved != claudeCost || got.Total != 0 {
					t.Fatalf("%s %s while in flight: %+v, want %d reserved and no spend", sub.scope, sub.id, got, claudeCost)
				}
			}
			tc.end(t, res)
			wantSpend := Amount(0)
			if tc.spent {
				wantSpend = claudeCost
			}
			for _, sub := range subjects {
				if got := usd(sub.scope, sub.id); got.Reserved != 0 || got.Total != wantSpend || got.Month != wantSpend {
					t.Errorf("%s %s after %s: %+v, want nothing reserved and %d spent", sub.scope, sub.id, tc.name, got, wantSpend)
				}
			}
			next, aerr := te.Admit(ctx, s, "claude-x", claudeUsage)
			if got := aerr == nil; got != tc.slotBack {
				t.Errorf("a second request within the minute admitted: %v, want %v (%v)", got, tc.slotBack, aerr)
			}
			if next != nil {
				next.Release()
			}
		})
	}
}
