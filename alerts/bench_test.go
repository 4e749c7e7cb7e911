package alerts

import "testing"

// BenchmarkRaise is the cost a breaker change pays to raise an alert: a
// non-blocking send, and when the queue is full a counted drop.
func BenchmarkRaise(b *testing.B) {
	for _, tc := range []struct {
		name string
		size int
	}{{"queue_free", 1 << 20}, {"queue_full", 1}} {
		b.Run(tc.name, func(b *testing.B) {
			d := NewDispatcher(Config{QueueSize: tc.size, Observer: newCounts()})
			e := Event{ID: "evt_bench", Kind: KindBreakerOpen, Message: "m"}
			b.ReportAllocs()
			for b.Loop() {
				d.Raise(e)
				if tc.size > 1 && len(d.queue) == cap(d.queue) {
					b.StopTimer()
					for len(d.queue) > 0 {
						<-d.queue
					}
					b.StartTimer()
				}
			}
		})
	}
}
