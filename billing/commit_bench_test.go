package billing

import (
	"context"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/caddy-air/caddy-air/store"
)

// nopLedger is a store.Ledger whose commits cost nothing, so that a
// benchmark on it measures the writer and the waking of waiters alone.
type nopLedger struct{ store.Ledger }

func (nopLedger) Append(context.Context, []store.Record) error { return nil }
func (nopLedger) Write(context.Context, []store.Record) error  { return nil }
func (nopLedger) Sync(context.Context) error                   { return nil }
func (nopLedger) Flush(ctx context.Context) error              { return ctx.Err() }
func (nopLedger) Err() error                                   { return nil }

// nopIntents is a store.Intents that keeps nothing.
type nopIntents struct{ store.Intents }

func (nopIntents) Resolve([]string) {}

// BenchmarkLedgerCommit measures the commit path of a settled request:
// 64 requests at a time settle a record each and wait until it is written
// as the Durability says, as a response's last bytes do, on a real Badger
// ledger or on one whose commits cost nothing (the writer and the waking
// of waiters alone), in each Durability: strict (a journal write and
// fdatasync per batch before the waiters are released) and journaled (a
// journal write per batch; the syncs in the background), with the
// default commit interval or none. ns/op is the wall time per record of
// all 64 waiters together: one waiter's wait, how long an answer's end
// waits, is about 64 × ns/op. Waiters are
// woken by their batch's commit group (one close per batch, as
// SettleDurable does) or, for comparison in strict mode, as SettleDurable
// was before commit groups: a channel and a callback per record
// (Enqueue's done), a send each. It reports the process's CPU per record
// (getrusage: the syncs' kernel time included) and the records per sync:
//
//	go test -run XXX -bench LedgerCommit -benchtime 5000x ./billing
func BenchmarkLedgerCommit(b *testing.B) {
	for _, backend := range []string{"badger", "nop"} {
		for _, mode := range []Durability{DurabilityJournaled, DurabilityStrict} {
			for _, interval := range []time.Duration{DefaultCommitInterval, 0} {
				for _, signal := range []string{"group", "callback"} {
					if signal == "callback" && mode == DurabilityJournaled {
						continue
					}
					name := backend + "/" + mode.String() + "/interval=" + interval.String() + "/" + signal
					b.Run(name, func(b *testing.B) { benchCommit(b, backend, mode, interval, signal == "group") })
				}
			}
		}
	}
}

// benchCommit runs one case of BenchmarkLedgerCommit.
func benchCommit(b *testing.B, backend string, mode Durability, interval time.Duration, group bool) {
	var l *Ledger
	if backend == "badger" {
		l = newLedger(b, openStore(b), 0)
	} else {
		l = NewLedger(nopLedger{}, nopIntents{}, nil)
		b.Cleanup(func() { _ = l.Close() })
	}
	l.SetDurability(mode)
	l.SetCommitInterval(interval)
	var seq atomic.Int64
	b.SetParallelism(32) // 64 waiters on 2 cores
	b0 := l.Stats().Batches
	c0 := cpuTime()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			rec := testRecord("req_"+strconv.FormatInt(seq.Add(1), 10)+"-4f1c2d9e-8b7a-4e6f-9c3d-2a1b0e9f8d7c", 12345)
			var err error
			if group {
				err = l.enqueueDurable(rec).wait(context.Background(), time.Minute)
			} else {
				err = waitCallback(l, rec, time.Minute)
			}
			if err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	n := seq.Load()
	if err := l.Flush(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64((cpuTime()-c0).Microseconds())/float64(n), "cpu-µs/record")
	if batches := l.Stats().Batches - b0; batches > 0 {
		b.ReportMetric(float64(n)/float64(batches), "records/sync")
	}
}

// waitCallback waits for rec to be durable as SettleDurable did before
// commit groups: a channel and a callback of its own, sent to by the
// writer, and a timer.
func waitCallback(l *Ledger, rec Record, wait time.Duration) error {
	durable := make(chan error, 1)
	l.Enqueue(rec, func(err error) { durable <- err })
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case err := <-durable:
		return err
	case <-t.C:
		return errNotDurable
	}
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
