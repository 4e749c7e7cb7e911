package jobs

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// memStore is a store of jobs by id with due times, claimed as
// store.Tasks.ClaimDue claims tasks.
type memStore struct {
	mu   sync.Mutex
	due  map[string]time.Time
	fail error
}

func newMemStore(n int, at time.Time) *memStore {
	m := &memStore{due: map[string]time.Time{}}
	for i := range n {
		m.due[string(rune('a'+i%26))+string(rune('0'+i/26))] = at
	}
	return m
}

func (m *memStore) claim(_ context.Context, now time.Time, lease time.Duration, max int) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fail != nil {
		return nil, m.fail
	}
	var out []string
	for id, due := range m.due {
		if len(out) == max {
			break
		}
		if !due.After(now) {
			m.due[id] = now.Add(lease)
			out = append(out, id)
		}
	}
	return out, nil
}

// done ends job id: it is never due again.
func (m *memStore) done(id string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.due, id)
}

func TestSweepWorksEveryDueJobOnceAcrossPollers(t *testing.T) {
	now := time.Unix(1000, 0)
	m := newMemStore(200, now)
	var mu sync.Mutex
	steps := map[string]int{}
	var inFlight, most atomic.Int32
	step := func(_ context.Context, id string) {
		n := inFlight.Add(1)
		for {
			old := most.Load()
			if n <= old || most.CompareAndSwap(old, n) {
				break
			}
		}
		mu.Lock()
		steps[id]++
		mu.Unlock()
		inFlight.Add(-1)
		// The job is not ended: only its lease keeps the other poller
		// from working on it again within this sweep.
	}
	newPoller := func() *Poller[string] {
		p, err := New(Config[string]{Name: "jobs", Claim: m.claim, Step: step, Lease: time.Minute, Tick: time.Second,
			Concurrency: 3, Now: func() time.Time { return now }})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	a, b := newPoller(), newPoller()
	var wg sync.WaitGroup
	wg.Go(func() { a.Sweep(context.Background()) })
	wg.Go(func() { b.Sweep(context.Background()) })
	wg.Wait()
	if len(steps) != 200 {
		t.Fatalf("%d jobs worked on, want all 200", len(steps))
	}
	for id, n := range steps {
		if n != 1 {
			t.Errorf("job %s worked on %d times within one lease", id, n)
		}
	}
	if n := most.Load(); n > 6 {
		t.Errorf("%d steps in flight at once, want at most 3 per poller", n)
	}
	// Once the lease ran out the jobs are due again.
	now = now.Add(time.Minute)
	a.Sweep(context.Background())
	if n := steps["a0"]; n != 2 {
		t.Errorf("after the lease, job a0 worked on %d times, want 2", n)
	}
}

func TestSweepBoundedAndStopsOnError(t *testing.T) {
	now := time.Unix(1000, 0)
	m := newMemStore(50, now)
	var steps atomic.Int32
	p, err := New(Config[string]{Name: "jobs", Claim: m.claim, Lease: time.Minute, Tick: time.Second, Concurrency: 4, MaxSweep: 10,
		Now:  func() time.Time { return now },
		Step: func(_ context.Context, id string) { steps.Add(1); m.done(id) }})
	if err != nil {
		t.Fatal(err)
	}
	p.Sweep(context.Background())
	// Claims of 4 until at least 10 were worked on: 12.
	if n := steps.Load(); n != 12 {
		t.Errorf("one sweep worked on %d jobs, want 12 (MaxSweep 10, claims of 4)", n)
	}
	m.fail = errors.New("store down")
	p.Sweep(context.Background())
	if n := steps.Load(); n != 12 {
		t.Errorf("a sweep whose claim failed worked on %d more jobs", n-12)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	m.fail = nil
	p.Sweep(ctx)
	if n := steps.Load(); n != 12 {
		t.Errorf("a sweep after ctx was done worked on %d more jobs", n-12)
	}
}

func TestRunChoresAndStop(t *testing.T) {
	now := time.Unix(1000, 0)
	m := newMemStore(1, now)
	swept := make(chan string, 10)
	var order []string
	var mu sync.Mutex
	note := func(s string) {
		mu.Lock()
		order = append(order, s)
		mu.Unlock()
	}
	chore := make(chan struct{}, 10)
	p, err := New(Config[string]{Name: "jobs", Claim: m.claim, Lease: time.Minute, Tick: time.Hour,
		Now: func() time.Time { return now },
		Step: func(_ context.Context, id string) {
			note("step")
			m.done(id)
			swept <- id
		},
		Chores: []Chore{
			{Every: time.Hour, AtStart: true, Run: func(context.Context) { note("start chore") }},
			{Every: time.Millisecond, Run: func(context.Context) {
				select {
				case chore <- struct{}{}:
				default:
				}
			}},
		}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.Run(ctx)
	}()
	<-swept
	<-chore
	<-chore // the chore repeats on its interval
	cancel()
	<-done
	mu.Lock()
	defer mu.Unlock()
	if len(order) < 2 || order[0] != "start chore" || order[1] != "step" {
		t.Errorf("order %v, want the AtStart chore before the first sweep", order)
	}
}

func TestNewRefusesIncompleteConfig(t *testing.T) {
	claim := (&memStore{}).claim
	step := func(context.Context, string) {}
	for name, c := range map[string]Config[string]{
		"no name":     {Claim: claim, Step: step, Lease: time.Minute, Tick: time.Second},
		"no claim":    {Name: "x", Step: step, Lease: time.Minute, Tick: time.Second},
		"no step":     {Name: "x", Claim: claim, Lease: time.Minute, Tick: time.Second},
		"no lease":    {Name: "x", Claim: claim, Step: step, Tick: time.Second},
		"no tick":     {Name: "x", Claim: claim, Step: step, Lease: time.Minute},
		"empty chore": {Name: "x", Claim: claim, Step: step, Lease: time.Minute, Tick: time.Second, Chores: []Chore{{Every: time.Second}}},
	} {
		if _, err := New(c); err == nil {
			t.Errorf("%s: New accepted it", name)
		}
	}
}

func TestBackoff(t *testing.T) {
	b := Backoff{Initial: 5 * time.Second, Max: 2 * time.Minute}
	for _, c := range []struct {
		failures   int
		retryAfter time.Duration
		want       time.Duration
	}{
		{1, 0, 5 * time.Second},
		{2, 0, 10 * time.Second},
		{3, 0, 20 * time.Second},
		{6, 0, 2 * time.Minute},
		{100, 0, 2 * time.Minute},
		{1 << 62, 0, 2 * time.Minute},
		{1, 30 * time.Second, 30 * time.Second},
		{1, time.Hour, 2 * time.Minute},
		{1, 1<<63 - 1, 2 * time.Minute},
	} {
		if got := b.Next(c.failures, c.retryAfter); got != c.want {
			t.Errorf("Next(%d, %s) = %s, want %s", c.failures, c.retryAfter, got, c.want)
		}
	}
	if got := (Backoff{Initial: time.Minute, Max: 30 * time.Second}).Next(1, 0); got != 30*time.Second {
		t.Errorf("an Initial above Max waits %s, want Max", got)
	}
	if got := b.Wait(time.Minute, time.Hour); got != 2*time.Minute {
		t.Errorf("Wait(1m, 1h) = %s, want the cap 2m", got)
	}
	if got := b.Wait(time.Minute, 10*time.Second); got != time.Minute {
		t.Errorf("Wait(1m, 10s) = %s, want 1m", got)
	}
}
