package billing

import (
	"context"
	"strconv"
	"testing"
)

func BenchmarkQuote(b *testing.B) {
	pt := mustPrices(b, testPrices)
	for _, bc := range []struct {
		name, model string
		u           Usage
	}{
		{"exact-tiered", "qwen3-max", Usage{Input: 50_000, CacheRead: 1_000, Output: 2_000}},
		{"glob-task", "veo-3-fast", Usage{}},
		{"fractional-nanos", "tiny", Usage{Input: 50_000, CacheRead: 1_000, Output: 2_000}},
		{"unpriced", "mystery", Usage{Input: 50_000}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = pt.Quote(bc.model, bc.u)
			}
		})
	}
}

// BenchmarkSettle measures Admit and Settle against a key with limits,
// including the batched ledger writes to Badger (Flush is timed), so it
// reports sustained throughput rather than the cost of enqueueing alone.
func BenchmarkSettle(b *testing.B) {
	ctx := context.Background()
	te := newTestEngine(b)
	if err := te.Budgets().SetLimits(ctx, ScopeKey, "key_1", Limits{Monthly: 1 << 62, RPM: 1 << 39}); err != nil {
		b.Fatal(err)
	}
	s := Subject{User: "alice", KeyID: "key_1"}
	u := Usage{Input: 50_000, CacheRead: 1_000, Output: 2_000}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		res, aerr := te.Admit(ctx, s, "qwen3-max", u)
		if aerr != nil {
			b.Fatal(aerr)
		}
		res.Settle(Record{ID: "bench-" + strconv.Itoa(i), Endpoint: EndpointChat, Usage: u, Outcome: OutcomeOK})
		i++
	}
	te.flush(b)
}
