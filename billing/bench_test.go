package billing

import (
	"context"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"
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
	// Audio tokens and tool calls, priced by the example file's mock-gpt,
	// and unpriced by mock-reasoner (a list of the charges is allocated).
	ex := examplePrices(b)
	for _, bc := range []struct{ name, model string }{{"charges", "mock-gpt"}, {"charges-unpriced", "mock-reasoner"}} {
		u := Usage{Input: 5_000, AudioInput: 2_000, Output: 800, AudioOutput: 500, WebSearches: 2, CodeSessions: 1}
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = ex.Quote(bc.model, u)
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
	if err := te.Budgets().SetLimits(ctx, ScopeKey, "key_1", Limits{Currency: "CNY", Monthly: 1 << 62, RPM: 1 << 39}); err != nil {
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

// BenchmarkLedgerPeakHeap appends records at 5,000 a second, about five
// times the harness's non-streaming rate, to a ledger on a real Badger, and
// reports the largest Go heap in use and the largest heap goal it saw
// (sampled every 10 ms): what the ledger adds to the gateway's memory
// under load, which used to be dominated by Badger's memtable flushes and
// compactions of the records; ns/op is only the pace. Run it long enough
// to include several flushes of the store's memtable:
//
//	go test -run XXX -bench LedgerPeakHeap -benchtime 30000x ./billing
func BenchmarkLedgerPeakHeap(b *testing.B) {
	l := newLedger(b, openStore(b), 0)
	runtime.GC()
	var peakInuse, peakGoal atomic.Uint64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		var ms runtime.MemStats
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > peakInuse.Load() {
				peakInuse.Store(ms.HeapInuse)
			}
			if ms.NextGC > peakGoal.Load() {
				peakGoal.Store(ms.NextGC)
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	const every = time.Second / 5000
	start := time.Now()
	i := 0
	for b.Loop() {
		rec := testRecord("req_"+strconv.Itoa(i)+"-4f1c2d9e-8b7a-4e6f-9c3d-2a1b0e9f8d7c", 12345)
		rec.Time = time.Time{}
		l.Enqueue(rec, nil)
		i++
		if d := time.Until(start.Add(time.Duration(i) * every)); d > 0 {
			time.Sleep(d)
		}
	}
	if err := l.Flush(context.Background()); err != nil {
		b.Fatal(err)
	}
	close(stop)
	<-sampled
	b.ReportMetric(float64(peakInuse.Load())/(1<<20), "peak-heap-MiB")
	b.ReportMetric(float64(peakGoal.Load())/(1<<20), "peak-gc-goal-MiB")
}
