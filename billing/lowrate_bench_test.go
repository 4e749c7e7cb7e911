package billing

import (
	"context"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// BenchmarkLedgerLowRate settles records at 50 a second, as the harness's
// long-conversation scenarios do, each waiting for its record to be
// durable as a response's last bytes do, on a ledger over a real Badger,
// and reports the process's CPU time per record (user and system, from
// getrusage): at such rates the syncs and the store's counting are paid
// per record or nearly, so this is what the ledger adds to a request.
// ns/op is only the pace. Run it for a few hundred records:
//
//	go test -run XXX -bench LedgerLowRate -benchtime 500x ./billing
func BenchmarkLedgerLowRate(b *testing.B) {
	l := newLedger(b, openStore(b), 0)
	const every = time.Second / 50
	cpu := func() time.Duration {
		var ru syscall.Rusage
		_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	c0 := cpu()
	start := time.Now()
	i := 0
	for b.Loop() {
		rec := testRecord("req_"+strconv.Itoa(i)+"-4f1c2d9e-8b7a-4e6f-9c3d-2a1b0e9f8d7c", 12345)
		rec.Time = time.Time{}
		durable := make(chan error, 1)
		l.Enqueue(rec, func(err error) { durable <- err })
		if err := <-durable; err != nil {
			b.Fatal(err)
		}
		i++
		if d := time.Until(start.Add(time.Duration(i) * every)); d > 0 {
			time.Sleep(d)
		}
	}
	if err := l.Flush(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64((cpu()-c0).Microseconds())/float64(i), "cpu-µs/record")
}
