package postgres

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/caddy-air/caddy-air/internal/pgtest"
	"github.com/caddy-air/caddy-air/store"
	"github.com/caddy-air/caddy-air/store/storetest"
)

// BenchmarkLedgerAppend measures one Append (one transaction: the records,
// their aggregates and spend) per batch size; ns/op is per batch, the
// record/s metric what one connection sustains, and cpu-µs/op the
// process's CPU time per batch (the gateway's share of a batch; the
// database's is not counted).
func BenchmarkLedgerAppend(b *testing.B) {
	for _, size := range []int{1, 16, 64} {
		b.Run(fmt.Sprintf("batch=%d", size), func(b *testing.B) {
			db := openBench(b, Options{})
			l := db.Repos().Ledger
			now := time.Now()
			batches := make([][]store.Record, b.N)
			for i := range batches {
				batches[i] = make([]store.Record, size)
				for j := range batches[i] {
					batches[i][j] = rec(fmt.Sprintf("b%d-%d", i, j), 1000)
					batches[i][j].Time = now
				}
			}
			cpu0 := processCPU(b)
			b.ResetTimer()
			for i := range b.N {
				if err := l.Append(context.Background(), batches[i]); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(b.N*size)/b.Elapsed().Seconds(), "records/s")
			b.ReportMetric(float64((processCPU(b)-cpu0).Microseconds())/float64(b.N), "cpu-µs/op")
		})
	}
}

// BenchmarkReserve measures a budget lease taken under its subject's row
// lock, with the room computed from spend and live leases.
func BenchmarkReserve(b *testing.B) {
	db := openBench(b, Options{})
	bud := db.Repos().Budgets
	sub := store.Subject{Scope: store.ScopeUser, ID: "alice"}
	if err := bud.SetLimits(context.Background(), sub, store.Limits{Currency: "USD", Monthly: 1 << 60}); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		l, err := bud.Reserve(context.Background(), sub, "USD", 1000, time.Now(), time.Minute)
		if err != nil {
			b.Fatal(err)
		}
		if err := bud.Release(context.Background(), l.ID); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkIntentAdd measures Add, which waits for its intent's commit,
// from 1 and from 64 concurrent requests: ns/op is per intent, and the
// commits/op metric shows how many requests share one commit.
func BenchmarkIntentAdd(b *testing.B) {
	for _, par := range []int{1, 64} {
		b.Run(fmt.Sprintf("concurrent=%d", par), func(b *testing.B) {
			db := openBench(b, Options{})
			in := db.Repos().Intents
			var next atomic.Int64
			b.SetParallelism((par + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					id := fmt.Sprintf("i%d", next.Add(1))
					if err := in.Add(rec(id, 1)); err != nil {
						b.Error(err)
						return
					}
					in.Resolve([]string{id})
				}
			})
			b.ReportMetric(float64(db.intents.commits.Load())/float64(b.N), "commits/op")
		})
	}
}

// BenchmarkUsage measures the reads of a console page on a ledger of
// 1,000,000 records (100,000 with -short); see storetest.BenchUsage.
func BenchmarkUsage(b *testing.B) {
	db := openBench(b, Options{Retention: 90 * 24 * time.Hour})
	storetest.BenchUsage(b, db.Repos(), storetest.BenchRecords())
}

// BenchmarkIntentsAtRate adds intents as a gateway under load does: one
// request every millisecond (open loop, 1000 a second), each adding its
// intent, waiting for its commit and resolving it 20 ms later. It
// reports the process's CPU time per intent (what the gateway spends on
// the commits; the database's is not counted), the commits per intent
// and Add's mean wait, for several gather delays (Options.IntentGather).
// Run it with a fixed count, e.g. -benchtime=3000x.
func BenchmarkIntentsAtRate(b *testing.B) {
	for _, gather := range []time.Duration{-1, time.Millisecond, 2 * time.Millisecond, IntentGather} {
		b.Run(fmt.Sprintf("gather=%v", max(gather, 0)), func(b *testing.B) {
			db := openBench(b, Options{IntentGather: gather})
			in := db.Repos().Intents
			var wg sync.WaitGroup
			var waited atomic.Int64
			cpu0 := processCPU(b)
			b.ResetTimer()
			tick := time.NewTicker(time.Millisecond)
			defer tick.Stop()
			for i := range b.N {
				<-tick.C
				wg.Add(1)
				go func() {
					defer wg.Done()
					id := fmt.Sprintf("i%d", i)
					start := time.Now()
					if err := in.Add(rec(id, 1)); err != nil {
						b.Error(err)
						return
					}
					waited.Add(int64(time.Since(start)))
					time.Sleep(20 * time.Millisecond)
					in.Resolve([]string{id})
				}()
			}
			wg.Wait()
			b.StopTimer()
			cpu := processCPU(b) - cpu0
			b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/op")
			b.ReportMetric(float64(db.intents.commits.Load())/float64(b.N), "commits/op")
			b.ReportMetric(float64(waited.Load())/float64(b.N)/1e3, "wait-µs/op")
		})
	}
}

// processCPU returns the CPU time the process used so far.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkWritersAtRate runs both database writers of a gateway under an
// open-loop load of rate requests a second: each request adds its intent
// (and waits for its commit), "calls its upstream" for 20 ms and queues
// its record; a ledger writer appends the queued records every 25 ms
// (billing's default commit interval) and then resolves their intents.
// It reports the process's CPU time per request, which is what the
// gateway spends on its database writes at that rate (the database's
// own CPU is not counted). 250 a second is what each of two instances
// serves in go run ./bench -scenarios pg's SSE load. Run it with a fixed
// count, e.g. -benchtime=2000x.
func BenchmarkWritersAtRate(b *testing.B) {
	for _, rate := range []int{250, 1000} {
		b.Run(fmt.Sprintf("rate=%d", rate), func(b *testing.B) {
			db := openBench(b, Options{})
			repos := db.Repos()
			var (
				mu     sync.Mutex
				queued []store.Record
				stop   = make(chan struct{})
				wdone  = make(chan struct{})
			)
			go func() {
				// The ledger writer, paced like billing's.
				defer close(wdone)
				t := time.NewTicker(25 * time.Millisecond)
				defer t.Stop()
				for {
					var last bool
					select {
					case <-stop:
						last = true
					case <-t.C:
					}
					mu.Lock()
					recs := queued
					queued = nil
					mu.Unlock()
					if len(recs) > 0 {
						if err := repos.Ledger.Append(context.Background(), recs); err != nil {
							b.Error(err)
						}
						ids := make([]string, len(recs))
						for i := range recs {
							ids[i] = recs[i].ID
						}
						repos.Intents.Resolve(ids)
					}
					if last {
						return
					}
				}
			}()
			var wg sync.WaitGroup
			cpu0 := processCPU(b)
			b.ResetTimer()
			tick := time.NewTicker(time.Second / time.Duration(rate))
			defer tick.Stop()
			for i := range b.N {
				<-tick.C
				wg.Add(1)
				go func() {
					defer wg.Done()
					r := rec(fmt.Sprintf("w%d", i), 1000)
					if err := repos.Intents.Add(r); err != nil {
						b.Error(err)
						return
					}
					time.Sleep(20 * time.Millisecond)
					mu.Lock()
					queued = append(queued, r)
					mu.Unlock()
				}()
			}
			wg.Wait()
			close(stop)
			<-wdone
			b.StopTimer()
			cpu := processCPU(b) - cpu0
			b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/op")
			b.ReportMetric(float64(db.intents.commits.Load())/float64(b.N), "commits/op")
		})
	}
}

// openBench opens the database of pgtest's cluster with o (its DSN set
// here) for benchmark b, and closes it when b ends.
func openBench(b *testing.B, o Options) *DB {
	b.Helper()
	o.DSN = pgtest.DSN(b)
	db, err := Open(context.Background(), o)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	return db
}
