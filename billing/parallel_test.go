package billing

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/caddy-air/caddy-air/store"
)

// TestMaxParallel checks max_parallel_requests of a key and of a user:
// the request over it gets 429 rate_limit_exceeded saying so, every way of
// ending an exchange gives its place back exactly once (ending twice gives
// back no more), and tasks do not count.
func TestMaxParallel(t *testing.T) {
	ctx := context.Background()
	ends := []struct {
		name string
		end  func(r *Reservation)
	}{
		{"Settle", func(r *Reservation) { r.Settle(Record{Usage: claudeUsage, Outcome: OutcomeOK}) }},
		{"SettleDurable", func(r *Reservation) {
			_, _ = r.SettleDurable(ctx, Record{Usage: claudeUsage, Outcome: OutcomeOK}, time.Second)
		}},
		{"Charge", func(r *Reservation) {
			_, _, _ = r.Charge(ctx, Record{ID: "req_1", Usage: claudeUsage, Outcome: OutcomeOK})
		}},
		{"Release", func(r *Reservation) { r.Release() }},
		{"ReleaseCost", func(r *Reservation) { r.ReleaseCost() }},
		// A background response: its exchange ended, its cost is held.
		{"Defer", func(r *Reservation) { r.Defer() }},
	}
	for _, scope := range []Scope{ScopeKey, ScopeUser} {
		for _, tc := range ends {
			t.Run(string(scope)+"/"+tc.name, func(t *testing.T) {
				te := newTestEngine(t)
				id := map[Scope]string{ScopeKey: "key_1", ScopeUser: "alice"}[scope]
				if err := te.Budgets().SetLimits(ctx, scope, id, Limits{Total: claudeCost * 1000, MaxParallel: 2}); err != nil {
					t.Fatal(err)
				}
				s := Subject{User: "alice", KeyID: "key_1"}
				first := admitN(t, te.Engine, s, 2)
				_, aerr := te.Admit(ctx, s, "claude-x", claudeUsage)
				if aerr == nil || aerr.Status != http.StatusTooManyRequests || code(aerr) != "rate_limit_exceeded" ||
					!strings.Contains(aerr.Message, "at most 2 may run at once") || aerr.RetryAfter != 1 {
					t.Fatalf("third parallel request: %+v, want 429 rate_limit_exceeded naming the limit", aerr)
				}
				// Tasks do not count and are not refused.
				task, aerr := te.AdmitTask(ctx, s, "gpt-image-1", 1, 0)
				if aerr != nil {
					t.Fatalf("a task beside 2 parallel requests: %v", aerr)
				}
				task.ReleaseCost()
				// Ending one request twice frees one place, not two.
				r := first[0]
				tc.end(r)
				tc.end(r)
				next := admitN(t, te.Engine, s, 1)
				if _, aerr := te.Admit(ctx, s, "claude-x", claudeUsage); code(aerr) != "rate_limit_exceeded" {
					t.Fatalf("after one ended twice, a third request: %v, want rate_limit_exceeded", aerr)
				}
				next[0].Release()
			})
		}
	}
}

// admitN admits n requests of s that stay in flight.
func admitN(t *testing.T, e *Engine, s Subject, n int) []*Reservation {
	t.Helper()
	var out []*Reservation
	for i := range n {
		r, aerr := e.Admit(context.Background(), s, "claude-x", claudeUsage)
		if aerr != nil {
			t.Fatalf("request %d of %d: %v", i+1, n, aerr)
		}
		out = append(out, r)
	}
	return out
}

// TestMaxParallelShared checks max_parallel_requests on budgets shared
// through PostgreSQL: it bounds each instance's requests in flight, and a
// request refused by it holds no slice and no rate units.
func TestMaxParallelShared(t *testing.T) {
	ctx := context.Background()
	key := store.Subject{Scope: store.ScopeKey, ID: "key_1"}
	ins := newInstances(t, 2, 5*time.Second, map[store.Subject]store.Limits{key: {Currency: "USD", Total: int64(claudeCost * 1000), RPM: 1000, MaxParallel: 1}})
	s := Subject{KeyID: "key_1"}
	var held []*Reservation
	for i, in := range ins {
		r, aerr := in.Admit(ctx, s, "claude-x", claudeUsage)
		if aerr != nil {
			t.Fatalf("instance %d: %v", i, aerr)
		}
		held = append(held, r)
		if _, aerr := in.Admit(ctx, s, "claude-x", claudeUsage); code(aerr) != "rate_limit_exceeded" {
			t.Fatalf("instance %d: a second parallel request: %v, want rate_limit_exceeded", i, aerr)
		}
	}
	for _, r := range held {
		r.Settle(Record{Endpoint: "chat", Usage: claudeUsage, Source: SourceReported, Status: 200, Outcome: OutcomeOK})
	}
	for i, in := range ins {
		r, aerr := in.Admit(ctx, s, "claude-x", claudeUsage)
		if aerr != nil {
			t.Fatalf("instance %d after the first ended: %v", i, aerr)
		}
		r.Release()
	}
}
