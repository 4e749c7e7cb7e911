package billing

import (
	"context"
	"testing"
	"time"

	"github.com/caddy-air/caddy-air/store"
)

// TestTaskHoldLimitsVideos holds a video task's estimate until the task
// ends: a key with less left than one video starts one and is refused a
// second while the first runs; the hold becomes the charge, or is given
// back when the task fails.
func TestTaskHoldLimitsVideos(t *testing.T) {
	const video = 800_000_000 // sora-2, 8 s at 0.10 USD a second
	tests := []struct {
		name      string
		end       func(t *testing.T, res *Reservation)
		wantSpent Amount
	}{
		{"succeeded", func(t *testing.T, res *Reservation) {
			rec, fresh, err := res.Charge(context.Background(), Record{ID: "task_1", Endpoint: EndpointTasks,
				Source: SourceUnits, Outcome: OutcomeOK, VideoMillis: 8000})
			if err != nil || !fresh || rec.Cost != video {
				t.Fatalf("charge = %+v, %v, %v", rec, fresh, err)
			}
		}, video},
		{"failed", func(t *testing.T, res *Reservation) { res.ReleaseCost() }, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			te := newTestEngine(t)
			s := Subject{User: "alice", KeyID: "key_1"}
			if err := te.Budgets().SetLimits(ctx, ScopeKey, "key_1", Limits{Total: video / 2}); err != nil {
				t.Fatal(err)
			}
			first, aerr := te.AdmitTask(ctx, s, "sora-2", 0, 8000)
			if aerr != nil {
				t.Fatalf("first video: %v", aerr)
			}
			if _, aerr := te.AdmitTask(ctx, s, "sora-2", 0, 8000); code(aerr) != "insufficient_quota" {
				t.Fatalf("second video while the first runs: %+v, want insufficient_quota", aerr)
			}
			if got := usdOf(te.Budgets().Status(ScopeKey, "key_1")); got.Reserved != video {
				t.Fatalf("while running: %+v, want %d reserved", got, video)
			}
			tt.end(t, first)
			if got := usdOf(te.Budgets().Status(ScopeKey, "key_1")); got.Reserved != 0 || got.Total != tt.wantSpent {
				t.Errorf("after the end: %+v, want nothing reserved and %d spent", got, tt.wantSpent)
			}
			// The room is back for a failed task, spent for a charged one.
			_, aerr = te.AdmitTask(ctx, s, "sora-2", 0, 8000)
			if refused := code(aerr) == "insufficient_quota"; refused != (tt.wantSpent > 0) {
				t.Errorf("next video after the end: %+v", aerr)
			}
		})
	}
}

// TestChargeWithPricesByTheCurrentEngine prices a held task by the engine
// of the config current when it ends, if it shares the reservation's
// ledger and budgets.
func TestChargeWithPricesByTheCurrentEngine(t *testing.T) {
	ctx := context.Background()
	te := newTestEngine(t)
	s := Subject{User: "alice", KeyID: "key_1"}
	reloaded := NewEngine(mustPrices(t, `{"currency":"USD","models":{"gpt-image-1":{"image":"0.10"}}}`), te.Ledger(), te.Budgets())
	foreign := newTestEngine(t)
	tests := []struct {
		name   string
		engine *Engine
		want   Amount
	}{
		{"current config", reloaded, 100_000_000},
		{"own engine", nil, 40_000_000},
		{"another state", foreign.Engine, 40_000_000},
	}
	for i, tt := range tests {
		res, aerr := te.AdmitTask(ctx, s, "gpt-image-1", 1, 0)
		if aerr != nil {
			t.Fatal(aerr)
		}
		rec, fresh, err := res.ChargeWith(ctx, tt.engine, Record{ID: "task_" + tt.name, Endpoint: EndpointTasks,
			Source: SourceUnits, Outcome: OutcomeOK, Images: 1})
		if err != nil || !fresh || rec.Cost != tt.want || rec.User != "alice" || rec.Model != "gpt-image-1" {
			t.Errorf("Test %d (%s): %+v, %v, %v; want cost %d", i, tt.name, rec, fresh, err, tt.want)
		}
	}
	if st := te.Budgets().Status(ScopeUser, "alice"); len(st.Spend) != 1 || st.Spend[0].Reserved != 0 || st.Spend[0].Total != 180_000_000 {
		t.Errorf("spend %+v", st.Spend)
	}
}

// usdOf returns the USD spend of st, zero if none.
func usdOf(st BudgetStatus) CurrencySpend {
	for _, cs := range st.Spend {
		if cs.Currency == "USD" {
			return cs
		}
	}
	return CurrencySpend{Currency: "USD"}
}

// TestSharedTaskHoldOutlivesLeases holds a video task's estimate on a
// shared budget for longer than a slice's lease, as a long chat stream
// does: the slice is extended while the task runs, so another instance
// is refused the room meanwhile; the hold then becomes the charge in the
// database, or its room comes back to the other instance.
func TestSharedTaskHoldOutlivesLeases(t *testing.T) {
	const video = 800_000_000 // sora-2, 8 s at 0.10 USD a second
	const ttl = 2 * time.Second
	tests := []struct {
		name      string
		charged   bool
		wantSpent Amount
	}{
		{"succeeded", true, video},
		{"failed", false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			key := store.Subject{Scope: store.ScopeKey, ID: "key_1"}
			ins := newInstances(t, 2, ttl, map[store.Subject]store.Limits{key: {Currency: "USD", Total: video + video/4}})
			s := Subject{KeyID: "key_1"}
			held, aerr := ins[0].AdmitTask(ctx, s, "sora-2", 0, 8000)
			if aerr != nil {
				t.Fatal(aerr)
			}
			time.Sleep(3 * ttl) // the task runs for three lease periods
			if _, aerr := ins[1].AdmitTask(ctx, s, "sora-2", 0, 8000); code(aerr) != "insufficient_quota" {
				t.Fatalf("a video on the other instance while the first runs: %+v, want insufficient_quota", aerr)
			}
			if tt.charged {
				if _, _, err := held.Charge(ctx, Record{ID: "task_1", Endpoint: EndpointTasks, Source: SourceUnits,
					Outcome: OutcomeOK, VideoMillis: 8000}); err != nil {
					t.Fatal(err)
				}
			} else {
				held.ReleaseCost()
			}
			if got := spent(t, ins[0].db, key); got != tt.wantSpent {
				t.Errorf("spent %s in the database, want %s", got, tt.wantSpent)
			}
			if tt.charged {
				return
			}
			deadline := time.Now().Add(5 * ttl)
			for {
				res, aerr := ins[1].AdmitTask(ctx, s, "sora-2", 0, 8000)
				if aerr == nil {
					res.Release()
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the failed task's room never came back: %v", aerr)
				}
				time.Sleep(100 * time.Millisecond)
			}
		})
	}
}
