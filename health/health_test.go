package health

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// clock is a settable time source.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func TestTrackerWindow(t *testing.T) {
	c := &clock{t: time.Unix(1_000_000, 0)}
	tr := NewTracker(12*time.Second, "a", "b")
	tr.now = c.now
	for i, tc := range []struct {
		advance   time.Duration
		record    []bool // results recorded for "a" after advancing
		wantTotal int64
		wantFail  int64
	}{
		{0, []bool{false, false, true}, 3, 2},
		{5 * time.Second, []bool{true}, 4, 2},
		{6 * time.Second, nil, 4, 2},           // 11 s after the first: still inside
		{2 * time.Second, nil, 1, 0},           // 13 s: the first three left
		{20 * time.Second, nil, 0, 0},          // all left
		{0, []bool{false}, 1, 1},               // a slot reused after a full turn
		{12 * time.Second, []bool{true}, 1, 0}, // the same slot, one turn later
	} {
		c.t = c.t.Add(tc.advance)
		for _, ok := range tc.record {
			tr.Record("a", ok)
		}
		got := tr.Stats("a")
		if got.Attempts != tc.wantTotal || got.Failures != tc.wantFail {
			t.Errorf("Test %d: %+v, want %d attempts, %d failures", i, got, tc.wantTotal, tc.wantFail)
		}
	}
	if st := tr.Stats("b"); st.Attempts != 0 || st.SuccessRate() != 1 {
		t.Errorf("an idle provider: %+v rate %v", st, st.SuccessRate())
	}
	tr.Record("new", false)
	all := tr.All()
	if len(all) != 3 || all[0].Name != "a" || all[2].Name != "new" || all[2].Failures != 1 {
		t.Errorf("All: %+v", all)
	}
	var nilTracker *Tracker
	nilTracker.Record("a", true) // must not panic
}

func TestTrackerConcurrent(t *testing.T) {
	tr := NewTracker(time.Minute, "p")
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 1000 {
				tr.Record("p", (i+g)%4 != 0)
			}
		}()
	}
	wg.Wait()
	if st := tr.Stats("p"); st.Attempts != 8000 || st.Failures != 2000 {
		t.Errorf("%+v, want 8000 attempts, 2000 failures", st)
	}
}

func TestEvaluate(t *testing.T) {
	healthy := Input{FreeBytes: 10 << 30, MarginBytes: 64 << 20, Window: time.Minute,
		Providers: []Provider{{Name: "p", Stats: Stats{Attempts: 10, Failures: 2}}}}
	for i, tc := range []struct {
		name    string
		edit    func(*Input)
		th      Thresholds
		failing map[string]string // check name -> a part of its reason
	}{
		{name: "healthy", edit: func(*Input) {}},
		{name: "store write fails", edit: func(in *Input) { in.StoreErr = errors.New("read-only") },
			failing: map[string]string{CheckStore: "read-only"}},
		{name: "below the margin", edit: func(in *Input) { in.FreeBytes = 1 << 20 },
			failing: map[string]string{CheckFreeSpace: "1.0 MiB free, below the margin of 64 MiB"}},
		{name: "cannot measure", edit: func(in *Input) { in.MeasureErr = "cannot measure" },
			failing: map[string]string{CheckFreeSpace: "cannot measure"}},
		{name: "ledger broken", edit: func(in *Input) { in.LedgerBroken = "sync failed" },
			failing: map[string]string{CheckLedger: "sync failed"}},
		{name: "ledger lags", edit: func(in *Input) { in.Queued, in.OldestQueued = 40, 6*time.Second },
			failing: map[string]string{CheckLedger: "40 records wait"}},
		{name: "ledger lag within the limit", edit: func(in *Input) { in.Queued, in.OldestQueued = 40, 4*time.Second }},
		{name: "ledger lag, a higher limit", edit: func(in *Input) { in.Queued, in.OldestQueued = 40, 6*time.Second },
			th: Thresholds{MaxLedgerLag: 10 * time.Second}},
		{name: "provider fails", edit: func(in *Input) { in.Providers[0].Failures, in.Providers[0].FailingClients = 6, 3 },
			failing: map[string]string{"provider:p": "6 of its last 10 attempts failed within 1m0s, for 3 or more clients"}},
		{name: "provider fails for one client only", edit: func(in *Input) { in.Providers[0].Failures, in.Providers[0].FailingClients = 10, 1 }},
		{name: "provider fails for two clients, one required", edit: func(in *Input) { in.Providers[0].Failures, in.Providers[0].FailingClients = 6, 2 },
			th:      Thresholds{MinClients: 1},
			failing: map[string]string{"provider:p": "6 of its last 10 attempts failed"}},
		{name: "provider fails, too few attempts", edit: func(in *Input) { in.Providers[0].Stats = Stats{Attempts: 4, Failures: 4, FailingClients: 4} }},
		{name: "provider fails, checks off", edit: func(in *Input) { in.Providers[0].Failures = 10 },
			th: Thresholds{MinSuccessRate: -1}},
		{name: "provider at exactly the rate", edit: func(in *Input) { in.Providers[0].Failures, in.Providers[0].FailingClients = 5, 5 }},
		{name: "several", edit: func(in *Input) { in.FreeBytes, in.LedgerBroken = 0, "closed" },
			failing: map[string]string{CheckFreeSpace: "below the margin", CheckLedger: "closed"}},
	} {
		in := healthy
		in.Providers = append([]Provider(nil), healthy.Providers...)
		tc.edit(&in)
		checks, ok := Evaluate(in, tc.th)
		if ok != (len(tc.failing) == 0) {
			t.Errorf("Test %d (%s): ok = %v with %+v", i, tc.name, ok, checks)
		}
		seen := 0
		for _, c := range checks {
			want, fails := tc.failing[c.Name]
			if c.OK == fails || fails && !strings.Contains(c.Reason, want) {
				t.Errorf("Test %d (%s): check %+v, want failing=%v with %q", i, tc.name, c, fails, want)
			}
			if fails {
				seen++
			}
		}
		if seen != len(tc.failing) {
			t.Errorf("Test %d (%s): %d of %d expected failing checks present: %+v", i, tc.name, seen, len(tc.failing), checks)
		}
		if tc.th.MinSuccessRate >= 0 && len(checks) != 4 {
			t.Errorf("Test %d (%s): %d checks, want 4", i, tc.name, len(checks))
		}
	}
}

// TestTrackerCountsFailingClients: a window tells apart the clients whose
// attempts failed, up to MaxClients, and forgets them with their slots.
func TestTrackerCountsFailingClients(t *testing.T) {
	c := &clock{t: time.Unix(1_000_000, 0)}
	tr := NewTracker(12*time.Second, "p")
	tr.now = c.now
	for range 20 {
		tr.RecordFrom("p", "mallory", false)
	}
	tr.RecordFrom("p", "alice", true)
	if st := tr.Stats("p"); st.Attempts != 21 || st.Failures != 20 || st.FailingClients != 1 {
		t.Errorf("one client's failures: %+v, want 1 failing client", st)
	}
	c.t = c.t.Add(5 * time.Second)
	tr.RecordFrom("p", "bob", false)
	tr.RecordFrom("p", "mallory", false) // the same client in another slot
	if st := tr.Stats("p"); st.FailingClients != 2 {
		t.Errorf("two clients over two slots: %+v", st)
	}
	for i := range 20 {
		tr.RecordFrom("p", fmt.Sprint("user", i), false)
	}
	if st := tr.Stats("p"); st.FailingClients != MaxClients {
		t.Errorf("many clients: %+v, want %d", st, MaxClients)
	}
	c.t = c.t.Add(20 * time.Second)
	if st := tr.Stats("p"); st.FailingClients != 0 || st.Attempts != 0 {
		t.Errorf("after the window: %+v", st)
	}
}

func TestEvaluateLive(t *testing.T) {
	if checks, ok := EvaluateLive(Input{FreeBytes: 0, MarginBytes: 1 << 30, Queued: 9, OldestQueued: time.Hour,
		Providers: []Provider{{Name: "p", Stats: Stats{Attempts: 10, Failures: 10, FailingClients: 8}}}}); !ok || len(checks) != 1 {
		t.Errorf("a full disk, a lagging ledger and a failing provider fail liveness: %+v", checks)
	}
	if checks, ok := EvaluateLive(Input{LedgerBroken: "sync failed; restart"}); ok || checks[0].Reason != "sync failed; restart" {
		t.Errorf("a broken ledger passes liveness: %+v", checks)
	}
}

// BenchmarkRecord is the cost the tracker adds to an upstream attempt.
func BenchmarkRecord(b *testing.B) {
	tr := NewTracker(time.Minute, "p")
	b.ReportAllocs()
	for b.Loop() {
		tr.Record("p", true)
	}
}
