package alerts

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// counts is an Observer that counts.
type counts struct {
	mu                     sync.Mutex
	raised, dropped, ended map[string]int
}

func newCounts() *counts {
	return &counts{raised: map[string]int{}, dropped: map[string]int{}, ended: map[string]int{}}
}
func (c *counts) Raised(k string)    { c.mu.Lock(); c.raised[k]++; c.mu.Unlock() }
func (c *counts) Dropped(k string)   { c.mu.Lock(); c.dropped[k]++; c.mu.Unlock() }
func (c *counts) Delivered(s string) { c.mu.Lock(); c.ended[s]++; c.mu.Unlock() }

func TestRaiseDropsWhenFull(t *testing.T) {
	c := newCounts()
	d := NewDispatcher(Config{QueueSize: 2, Observer: c})
	for range 5 {
		d.Raise(Event{ID: "e", Kind: KindBudget}) // nothing drains the queue: it must not block
	}
	if c.raised[KindBudget] != 2 || c.dropped[KindBudget] != 3 {
		t.Errorf("raised %d dropped %d, want 2 and 3", c.raised[KindBudget], c.dropped[KindBudget])
	}
}

func TestDispatcherDeliversEachEventOnce(t *testing.T) {
	var mu sync.Mutex
	got := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got[r.URL.Path+" "+r.Header.Get(IDHeader)]++
		mu.Unlock()
	}))
	defer srv.Close()
	c := newCounts()
	ob := &MemoryOutbox{}
	d := NewDispatcher(Config{Observer: c, Poll: 10 * time.Millisecond, Webhooks: []*Webhook{
		{Name: "all", URL: srv.URL + "/all"},
		{Name: "breakers", URL: srv.URL + "/breakers", Events: []string{KindBreakerOpen}},
	}})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { d.Run(ctx, ob); close(done) }()
	d.Raise(Event{ID: "evt_1", Kind: KindBreakerOpen})
	d.Raise(Event{ID: "evt_1", Kind: KindBreakerOpen}) // the same occurrence again
	d.Raise(Event{ID: "evt_2", Kind: KindLedgerDown})
	var n atomic.Int32
	for n.Load() < 3 {
		time.Sleep(5 * time.Millisecond)
		c.mu.Lock()
		n.Store(int32(c.ended[StateDelivered]))
		c.mu.Unlock()
	}
	time.Sleep(50 * time.Millisecond) // time for a wrong second delivery to show
	cancel()
	<-done
	want := map[string]int{"/all evt_1": 1, "/breakers evt_1": 1, "/all evt_2": 1}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != len(want) {
		t.Fatalf("deliveries %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s delivered %d times, want %d", k, got[k], v)
		}
	}
	recent, _ := ob.Recent(context.Background(), 10)
	if len(recent) != 3 || recent[0].Event.ID != "evt_2" || recent[0].State != StateDelivered || recent[0].Attempts != 1 {
		t.Errorf("recent %+v: want 3 deliveries, evt_2's first, delivered in 1 attempt", recent)
	}
}

// downOutbox refuses Add while down is set, as a store that is
// unavailable.
type downOutbox struct {
	*MemoryOutbox
	down atomic.Bool
}

func (o *downOutbox) Add(ctx context.Context, e Event, targets []string) (bool, error) {
	if o.down.Load() {
		return false, context.DeadlineExceeded
	}
	return o.MemoryOutbox.Add(ctx, e, targets)
}

func TestEventRaisedWhileTheStoreIsDownIsDeliveredLater(t *testing.T) {
	var got atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(IDHeader) == "evt_down" {
			got.Add(1)
		}
	}))
	defer srv.Close()
	ob := &downOutbox{MemoryOutbox: &MemoryOutbox{}}
	ob.down.Store(true)
	d := NewDispatcher(Config{Poll: 5 * time.Millisecond, Webhooks: []*Webhook{{Name: "ops", URL: srv.URL}}})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { d.Run(ctx, ob); close(done) }()
	d.Raise(Event{ID: "evt_down", Kind: KindLedgerDown})
	time.Sleep(30 * time.Millisecond) // several refused attempts to store it
	if n, _ := ob.Recent(ctx, 10); len(n) != 0 || got.Load() != 0 {
		t.Fatalf("stored %v, delivered %d while the store was down", n, got.Load())
	}
	ob.down.Store(false)
	for got.Load() == 0 {
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(30 * time.Millisecond)
	cancel()
	<-done
	if got.Load() != 1 {
		t.Errorf("delivered %d times, want once", got.Load())
	}
}
