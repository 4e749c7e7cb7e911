package badger

import (
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/caddy-air/caddy-air/store"
)

// intentRecord is an intent as a chat request leaves it: about 300 bytes
// in the journal.
func intentRecord(i int) store.Record {
	return store.Record{
		ID: "chatcmpl-air-" + strconv.Itoa(1_000_000+i) + "-5f0c2a9e4b7d", Time: time.Now(), Endpoint: "chat",
		User: "alice@example.com", KeyID: "key_01HZX3Q4V8Y2N6M5K7J9", Model: "claude-sonnet-4-5",
		Provider: "anthropic", Source: "estimated", Status: 0, Outcome: "pending",
		Usage: store.Usage{Input: 1200}, Priced: true, Currency: "USD", Cost: 36000,
		Deployment: "anthropic-eu", ServedModel: "claude-sonnet-4-5-20250929",
	}
}

// rusage is the CPU time of the process (who = RUSAGE_SELF).
func rusage(who int) time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(who, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkIntentsAdd measures Intents.Add as the ledger uses it: each
// intent is resolved 64 intents later (its record committed), so that
// segments fill, rotate and are deleted as under load. cpu-µs/op is the
// process's CPU per Add from getrusage.
//
// burst adds back to back. paced adds 2,000 a second with the thread
// asleep in between, as on a gateway under load (a write costs more with
// cold caches); its cpu-µs/op is the CPU of the loop minus that of the
// same loop without Add, run first.
func BenchmarkIntentsAdd(b *testing.B) {
	for _, bc := range []struct {
		name  string
		every time.Duration
	}{
		{"burst", 0},
		{"paced", time.Millisecond},
	} {
		b.Run(bc.name, func(b *testing.B) {
			il, err := openIntents(nil, b.TempDir(), zap.NewNop())
			if err != nil {
				b.Fatal(err)
			}
			defer il.close()
			recs := make([]store.Record, 4096)
			for i := range recs {
				recs[i] = intentRecord(i)
			}
			ids := make([]string, 0, 64)
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			b.ReportAllocs()
			b.ResetTimer()
			start := rusage(syscall.RUSAGE_SELF)
			var inAdd time.Duration
			next := time.Now()
			for i := 0; i < b.N; i++ {
				var t0 time.Duration
				if bc.every > 0 {
					next = next.Add(bc.every)
					time.Sleep(time.Until(next))
					t0 = threadCPU()
				}
				rec := &recs[i%len(recs)]
				if err := il.Add(*rec); err != nil {
					b.Fatal(err)
				}
				if bc.every > 0 {
					inAdd += threadCPU() - t0
				}
				if ids = append(ids, rec.ID); len(ids) == cap(ids) {
					il.Resolve(ids)
					ids = ids[:0]
				}
			}
			cpu := rusage(syscall.RUSAGE_SELF) - start
			if bc.every > 0 {
				cpu = inAdd - time.Duration(b.N)*threadCPUCost()
			}
			b.StopTimer()
			b.ReportMetric(float64(cpu.Nanoseconds())/1e3/float64(b.N), "cpu-µs/op")
		})
	}
}

// threadCPU is the calling thread's CPU time (CLOCK_THREAD_CPUTIME_ID,
// exact to the nanosecond, kernel time included).
func threadCPU() time.Duration {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts)
	return time.Duration(ts.Nano())
}

// threadCPUCost is the CPU that a pair of threadCPU calls adds to the
// measurement between them.
func threadCPUCost() time.Duration {
	const n = 10000
	var sum time.Duration
	for range n {
		t0 := threadCPU()
		sum += threadCPU() - t0
	}
	return sum / n
}
