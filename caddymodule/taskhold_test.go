package caddymodule

import (
	"context"
	"testing"

	"go.uber.org/zap"

	"github.com/caddy-air/caddy-air/billing"
	"github.com/caddy-air/caddy-air/gateway"
	"github.com/caddy-air/caddy-air/store/badger"
	"github.com/caddy-air/caddy-air/tasks"
)

// TestTaskHoldEnds admits 8-second videos for a key with less than one
// video left and a limit of one request a minute: a second video is
// refused while the first's hold stands, and each way the hold ends leaves
// the spend, the reservations and the request count a user would expect.
func TestTaskHoldEnds(t *testing.T) {
	const video = billing.Amount(800_000_000) // 8 s at 0.10 USD a second
	tests := []struct {
		name      string
		end       func(h tasks.Hold) error
		wantSpent billing.Amount
		wantNext  string // the next create's refusal
	}{
		{"succeeded", func(h tasks.Hold) error {
			return h.Charge(context.Background(), tasks.Charge{TaskID: "task_1", User: "alice", KeyID: "key_1",
				Model: "vid", Kind: "video", VideoSeconds: 8}.Record())
		}, video, "insufficient_quota"},
		{"failed", func(h tasks.Hold) error { h.Release(); return nil }, 0, "rate_limit_exceeded"},
		{"refused", func(h tasks.Hold) error { h.Cancel(); return nil }, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			repos, err := badger.OpenRepos(badger.Config{Dir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = repos.Close() })
			budgets, err := billing.NewBudgets(ctx, repos.Budgets)
			if err != nil {
				t.Fatal(err)
			}
			ledger := billing.NewLedger(repos.Ledger, repos.Intents, zap.NewNop())
			t.Cleanup(func() { _ = ledger.Close() })
			prices, err := billing.ParsePrices("prices.json", []byte(`{"currency":"USD","models":{"vid":{"video_second":"0.10"}}}`))
			if err != nil {
				t.Fatal(err)
			}
			engine := billing.NewEngine(prices, ledger, budgets)
			if err := budgets.SetLimits(ctx, billing.ScopeKey, "key_1", billing.Limits{Total: video / 2, RPM: 1}); err != nil {
				t.Fatal(err)
			}
			admit := (&gateway.Services{Billing: engine}).AdmitTask(ctx, billing.Subject{User: "alice", KeyID: "key_1"})
			est := tasks.Estimate{Model: "vid", Kind: "video", VideoSeconds: 8}
			h, aerr := admit(est)
			if aerr != nil {
				t.Fatalf("first video: %v", aerr)
			}
			if _, aerr := admit(est); aerr == nil || aerr.Code == nil || *aerr.Code != "insufficient_quota" {
				t.Fatalf("second video while the first is held: %+v, want insufficient_quota", aerr)
			}
			if got := keyReserved(budgets); got != video {
				t.Fatalf("reserved %s while the video runs, want %s", got, video)
			}
			if err := tt.end(h); err != nil {
				t.Fatal(err)
			}
			if got := keyReserved(budgets); got != 0 {
				t.Errorf("reserved %s after the end", got)
			}
			if got := keySpent(budgets); got != tt.wantSpent {
				t.Errorf("spent %s, want %s", got, tt.wantSpent)
			}
			_, aerr = admit(est)
			if got := ""; aerr != nil && aerr.Code != nil {
				got = *aerr.Code
				if got != tt.wantNext {
					t.Errorf("next video: %s, want %q", got, tt.wantNext)
				}
			} else if tt.wantNext != "" {
				t.Errorf("next video admitted, want %s", tt.wantNext)
			}
		})
	}
}

// keyReserved returns the USD reservations of key_1.
func keyReserved(b *billing.Budgets) billing.Amount { return keyUSD(b).Reserved }

// keySpent returns the USD spend of all time of key_1.
func keySpent(b *billing.Budgets) billing.Amount { return keyUSD(b).Total }

// keyUSD returns the USD spend of key_1.
func keyUSD(b *billing.Budgets) billing.CurrencySpend {
	for _, cs := range b.Status(billing.ScopeKey, "key_1").Spend {
		if cs.Currency == "USD" {
			return cs
		}
	}
	return billing.CurrencySpend{}
}
