package responses

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/caddy-air/caddy-air/billing"
)

// fakeHold is a Hold that counts how it ended.
type fakeHold struct {
	mu       sync.Mutex
	charged  []billing.Record
	released int
	fail     error
}

func (h *fakeHold) Charge(_ context.Context, rec billing.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.charged = append(h.charged, rec)
	return h.fail
}

func (h *fakeHold) Release() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.released++
}

// Cancel fails the test: the hold of a response that exists is charged
// or released, never cancelled.
func (h *fakeHold) Cancel() { panic("the hold of a registered background response was cancelled") }

// ends returns the records charged through h and how often it was
// released.
func (h *fakeHold) ends() ([]billing.Record, int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]billing.Record(nil), h.charged...), h.released
}

// held registers a pending response with a hold, as the create handler
// does: the hold once the response is pending.
func (e *env) held() (Ref, *fakeHold) {
	ref, h := e.register(), &fakeHold{}
	e.poller.Hold(respID, h)
	return ref, h
}

// TestHoldEndsOnceWithItsResponse: whoever bills a held response charges
// it through its hold, once, whatever the outcome; the Biller is not
// used, and nothing stays held.
func TestHoldEndsOnceWithItsResponse(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		body    string
		status  int
		bill    func(e *env, ref Ref) // nil: the poller's sweep
		outcome string
	}{
		{name: "completed, polled", status: 200, body: completed, outcome: billing.OutcomeOK},
		{name: "failed, polled", status: 200, body: `{"status":"failed","usage":{"input_tokens":7,"output_tokens":0}}`, outcome: billing.OutcomeUpstreamError},
		{name: "cancelled, polled", status: 200, body: `{"status":"cancelled"}`, outcome: billing.OutcomeCanceled},
		{name: "gone upstream", status: 404, body: `{}`, outcome: OutcomeUnfinished},
		{name: "completed, retrieved", status: 200, body: completed, outcome: billing.OutcomeOK, bill: func(e *env, ref Ref) {
			if err := e.poller.Settle(ctx, respID, ref, ref.Finish("completed", billing.Usage{Output: 50}, true, "")); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "completed, before a delete", status: 200, body: completed, outcome: billing.OutcomeOK, bill: func(e *env, ref Ref) {
			if ok, err := e.poller.SettleIfFinished(ctx, respID, ref); !ok || err != nil {
				t.Fatalf("SettleIfFinished = %v, %v", ok, err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			ref, h := e.held()
			e.up.set(tc.status, tc.body)
			if tc.bill != nil {
				tc.bill(e, ref)
			}
			for range 3 {
				e.clock.Advance(5 * time.Second)
				e.poller.Sweep(ctx)
				e.poller.SweepHolds(ctx)
			}
			charged, released := h.ends()
			if len(charged) != 1 || released != 0 || charged[0].ID != "req_create" || charged[0].Outcome != tc.outcome {
				t.Fatalf("hold charged %+v, released %d times; want one charge of req_create with outcome %s", charged, released, tc.outcome)
			}
			if _, w := e.ledger.snapshot(); w != 0 {
				t.Errorf("%d writes through the Biller, want the hold's charge only", w)
			}
			if n := e.poller.c.Holds.Len(); n != 0 || e.pending() {
				t.Errorf("%d holds kept, pending %v after billing", n, e.pending())
			}
		})
	}
}

// TestHoldWhileRunning: a running response keeps its hold through polls
// and sweeps.
func TestHoldWhileRunning(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	_, h := e.held()
	e.up.set(http.StatusOK, `{"status":"in_progress"}`)
	for range 3 {
		e.clock.Advance(10 * time.Second)
		e.poller.Sweep(ctx)
		e.poller.SweepHolds(ctx)
	}
	if charged, released := h.ends(); len(charged)+released != 0 || e.poller.c.Holds.Len() != 1 {
		t.Errorf("a running response's hold ended (%d charges, %d releases) or is not kept", len(charged), released)
	}
}

// TestHoldEndedElsewhere: a response billed by another instance (its
// own holds), or whose mapping is found billed by the poller, gives its
// hold back, once; a reload's poller shares the holds.
func TestHoldEndedElsewhere(t *testing.T) {
	ctx := context.Background()
	t.Run("billed by another instance", func(t *testing.T) {
		e := newEnv(t)
		ref, h := e.held()
		other, err := NewPoller(Config{Store: e.store, Routes: e.routes, Biller: e.ledger, Now: e.clock.Now, Lease: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		if err := other.Settle(ctx, respID, ref, ref.Finish("completed", billing.Usage{Output: 1}, true, "")); err != nil {
			t.Fatal(err)
		}
		e.poller.SweepHolds(ctx)
		e.poller.SweepHolds(ctx)
		if charged, released := h.ends(); len(charged) != 0 || released != 1 || e.poller.c.Holds.Len() != 0 {
			t.Errorf("hold of a response billed elsewhere: %d charges, %d releases; want released once", len(charged), released)
		}
		if _, w := e.ledger.snapshot(); w != 1 {
			t.Errorf("%d writes, want the other instance's", w)
		}
	})
	t.Run("found billed when claimed", func(t *testing.T) {
		e := newEnv(t)
		ref, h := e.held()
		ref.Unbilled = false
		// Billed elsewhere while still claimable: the claim sees it billed.
		if err := e.store.PutPending(ctx, respID, ref.Encode(), TTL, e.clock.Now()); err != nil {
			t.Fatal(err)
		}
		e.poller.Sweep(ctx)
		if charged, released := h.ends(); len(charged) != 0 || released != 1 {
			t.Errorf("hold: %d charges, %d releases; want released once", len(charged), released)
		}
	})
	t.Run("billed before its hold was kept", func(t *testing.T) {
		e := newEnv(t)
		e.register()
		e.up.set(http.StatusOK, completed)
		e.clock.Advance(5 * time.Second)
		e.poller.Sweep(ctx)
		h := &fakeHold{}
		e.poller.Hold(respID, h)
		e.poller.SweepHolds(ctx)
		if charged, released := h.ends(); len(charged) != 0 || released != 1 || e.poller.c.Holds.Len() != 0 {
			t.Errorf("hold kept after its response was billed: %d charges, %d releases; want released once", len(charged), released)
		}
		if _, w := e.ledger.snapshot(); w != 1 {
			t.Errorf("%d Biller writes, want 1", w)
		}
	})
	t.Run("reload", func(t *testing.T) {
		e := newEnv(t)
		ref, h := e.held()
		next, err := NewPoller(Config{Store: e.store, Routes: e.routes, Biller: e.ledger, Now: e.clock.Now, Lease: time.Minute,
			Holds: e.poller.c.Holds})
		if err != nil {
			t.Fatal(err)
		}
		if err := next.Settle(ctx, respID, ref, ref.Finish("completed", billing.Usage{Output: 1}, true, "")); err != nil {
			t.Fatal(err)
		}
		if charged, released := h.ends(); len(charged) != 1 || released != 0 {
			t.Errorf("hold after a reload: %d charges, %d releases; want charged once", len(charged), released)
		}
	})
}

// TestHoldChargeFails: a hold whose charge fails has ended; the response
// stays pending and the next poll bills it through the Biller.
func TestHoldChargeFails(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	_, h := e.held()
	h.fail = errors.New("ledger down")
	e.up.set(http.StatusOK, completed)
	e.clock.Advance(5 * time.Second)
	e.poller.Sweep(ctx)
	if !e.pending() || e.poller.c.Holds.Len() != 0 {
		t.Fatalf("after a failed charge: pending %v, %d holds; want pending and none", e.pending(), e.poller.c.Holds.Len())
	}
	e.clock.Advance(10 * time.Second)
	e.poller.Sweep(ctx)
	if recs, w := e.ledger.snapshot(); w != 1 || len(recs) != 1 {
		t.Errorf("%d Biller writes, want the retry's", w)
	}
	if charged, released := h.ends(); len(charged) != 1 || released != 0 {
		t.Errorf("hold: %d charges, %d releases; want the one failed charge", len(charged), released)
	}
}
