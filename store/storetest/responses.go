package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/caddy-air/caddy-air/store"
)

// RunResponses checks store.Responses, if the backend has it: a Put
// replaces, a missing id is ErrNotFound, mappings survive a restart, and
// pending mappings are claimed with leases like tasks.
func RunResponses(t *testing.T, b Backend) {
	ctx := context.Background()
	h := b.open(t)
	r := h.r.Responses
	if r == nil {
		return // optional: nothing stores response ids yet
	}
	must(t, r.Put(ctx, "resp_1", []byte("a"), time.Hour))
	must(t, r.Put(ctx, "resp_1", []byte("b"), time.Hour))
	if v, err := r.Get(ctx, "resp_1"); err != nil || string(v) != "b" {
		t.Errorf("Get = %q, %v", v, err)
	}
	if _, err := r.Get(ctx, "resp_2"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Get(missing) = %v", err)
	}
	must(t, r.Put(ctx, "resp/with spaces", []byte("c"), time.Hour))
	b.reopen(t, h)
	r = h.r.Responses
	for id, want := range map[string]string{"resp_1": "b", "resp/with spaces": "c"} {
		if v, err := r.Get(ctx, id); err != nil || string(v) != want {
			t.Errorf("after a restart, Get(%q) = %q, %v", id, v, err)
		}
	}
	t.Run("Pending", func(t *testing.T) { runPendingResponses(t, b) })
	t.Run("ConcurrentClaims", func(t *testing.T) { runConcurrentResponseClaims(t, b) })
}

// pendingIDs returns the sorted ids of ps.
func pendingIDs(ps []store.PendingResponse) []string {
	ids := make([]string, len(ps))
	for i, p := range ps {
		ids[i] = p.ID
	}
	slices.Sort(ids)
	return ids
}

// runPendingResponses checks claims of due pending mappings only,
// exclusive within a lease and taken over after it, ended by Put, moved
// by Reschedule and kept across a restart.
func runPendingResponses(t *testing.T, b Backend) {
	ctx := context.Background()
	h := b.open(t)
	r := h.r.Responses
	if r == nil {
		return
	}
	now := time.Now().UTC().Truncate(time.Millisecond)
	must(t, r.PutPending(ctx, "due 1", []byte("v1"), time.Hour, now.Add(-time.Second)))
	must(t, r.PutPending(ctx, "due/2", []byte("v2"), time.Hour, now))
	must(t, r.PutPending(ctx, "later", []byte("v3"), time.Hour, now.Add(time.Minute)))
	must(t, r.Put(ctx, "plain", []byte("v4"), time.Hour))
	if v, err := r.Get(ctx, "due 1"); err != nil || string(v) != "v1" {
		t.Errorf("Get(pending) = %q, %v; want its value", v, err)
	}
	b.reopen(t, h)
	r = h.r.Responses
	claimed, err := r.ClaimDue(ctx, now, time.Minute, 10)
	must(t, err)
	if ids := pendingIDs(claimed); !slices.Equal(ids, []string{"due 1", "due/2"}) {
		t.Fatalf("ClaimDue after a restart = %v, want the two due ids", ids)
	}
	for _, c := range claimed {
		if !c.Due.Equal(now.Add(time.Minute)) {
			t.Errorf("claimed %s: Due %v, want the end of the lease %v", c.ID, c.Due, now.Add(time.Minute))
		}
		if want := map[string]string{"due 1": "v1", "due/2": "v2"}[c.ID]; string(c.Value) != want {
			t.Errorf("claimed %s with value %q, want %q", c.ID, c.Value, want)
		}
	}
	if again, _ := r.ClaimDue(ctx, now.Add(30*time.Second), time.Minute, 10); len(again) != 0 {
		t.Errorf("ClaimDue within the lease = %v, want none", pendingIDs(again))
	}
	// The owner died: after the lease another claim takes them over, with
	// the one that fell due meanwhile.
	over, err := r.ClaimDue(ctx, now.Add(61*time.Second), time.Minute, 10)
	must(t, err)
	if ids := pendingIDs(over); !slices.Equal(ids, []string{"due 1", "due/2", "later"}) {
		t.Errorf("ClaimDue after the lease = %v, want all three pending ids", ids)
	}
	if lim, _ := r.ClaimDue(ctx, now.Add(10*time.Minute), time.Minute, 2); len(lim) != 2 {
		t.Errorf("ClaimDue with max 2 claimed %d", len(lim))
	}
	// Put ends the pending state; Reschedule then changes nothing.
	must(t, r.Put(ctx, "due 1", []byte("billed"), time.Hour))
	if ok, err := r.Reschedule(ctx, "due 1", now); ok || err != nil {
		t.Errorf("Reschedule(no longer pending) = %v, %v; want false", ok, err)
	}
	if ok, err := r.Reschedule(ctx, "missing", now); ok || err != nil {
		t.Errorf("Reschedule(missing) = %v, %v; want false", ok, err)
	}
	if ok, err := r.Reschedule(ctx, "due/2", now.Add(time.Hour-time.Minute)); !ok || err != nil {
		t.Errorf("Reschedule(pending) = %v, %v; want true", ok, err)
	}
	if got, _ := r.ClaimDue(ctx, now.Add(20*time.Minute), time.Hour, 10); !slices.Equal(pendingIDs(got), []string{"later"}) {
		t.Errorf("ClaimDue after a Put and a Reschedule = %v, want only later", pendingIDs(got))
	}
	if got, _ := r.ClaimDue(ctx, now.Add(time.Hour-time.Minute), time.Second, 10); !slices.Equal(pendingIDs(got), []string{"due/2"}) {
		t.Errorf("ClaimDue at the rescheduled time = %v, want due/2", pendingIDs(got))
	}
	if v, err := r.Get(ctx, "due 1"); err != nil || string(v) != "billed" {
		t.Errorf("Get after Put = %q, %v", v, err)
	}
	// An expired mapping is never claimed.
	if got, _ := r.ClaimDue(ctx, now.Add(2*time.Hour), time.Minute, 10); len(got) != 0 {
		t.Errorf("ClaimDue past the expiry = %v, want none", pendingIDs(got))
	}
}

// runConcurrentResponseClaims claims from several goroutines at once:
// every pending id is claimed exactly once within a lease.
func runConcurrentResponseClaims(t *testing.T, b Backend) {
	ctx := context.Background()
	h := b.open(t)
	r := h.r.Responses
	if r == nil {
		return
	}
	now := time.Now().UTC()
	const n = 40
	for i := range n {
		must(t, r.PutPending(ctx, fmt.Sprintf("resp_%02d", i), []byte("v"), time.Hour, now))
	}
	var mu sync.Mutex
	seen := map[string]int{}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 8 {
				got, err := r.ClaimDue(ctx, now, time.Minute, 3)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				for _, p := range got {
					if prev, ok := seen[p.ID]; ok {
						t.Errorf("%s claimed by goroutines %d and %d within a lease", p.ID, prev, g)
					}
					seen[p.ID] = g
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(seen) != n {
		t.Errorf("%d ids claimed, want %d", len(seen), n)
	}
}
