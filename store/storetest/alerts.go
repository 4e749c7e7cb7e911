package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/caddy-air/caddy-air/store"
)

// RunAlerts checks the alerts outbox: an event is stored once by its id,
// a delivery is leased to one owner at a time and again once its lease ran
// out, only its owner finishes it, and the newest events come first.
func RunAlerts(t *testing.T, b Backend) {
	ctx := context.Background()
	h := b.open(t)
	a := h.r.Alerts
	t0 := time.Date(2026, 11, 28, 1, 0, 0, 0, time.UTC)
	e1 := store.AlertEvent{ID: "evt_1", Kind: "budget", At: t0, Message: "key k spent 50%", Data: map[string]string{"threshold": "50"}}
	e2 := store.AlertEvent{ID: "evt_2", Kind: "ledger_unavailable", At: t0.Add(time.Second), Message: "down"}
	e3 := store.AlertEvent{ID: "evt/3", Kind: "breaker_open", At: t0.Add(2 * time.Second), Message: "open"}
	for i, tc := range []struct {
		e       store.AlertEvent
		targets []string
		want    bool
	}{
		{e1, []string{"ops", "slack"}, true},
		{e1, []string{"ops"}, false},
		{e2, nil, true},
	} {
		if added, err := a.Add(ctx, tc.e, tc.targets); err != nil || added != tc.want {
			t.Fatalf("Test %d: Add(%s) = %v, %v; want %v", i, tc.e.ID, added, err, tc.want)
		}
	}
	got, err := a.Claim(ctx, "one", time.Hour, 10)
	if err != nil || len(got) != 2 || got[0].Event.ID != "evt_1" || got[0].Event.Data["threshold"] != "50" || got[0].Event.Message != e1.Message ||
		got[0].State != store.AlertPending || got[0].Target == got[1].Target {
		t.Fatalf("Claim = %+v, %v; want evt_1's two pending deliveries", got, err)
	}
	if again, err := a.Claim(ctx, "two", time.Hour, 10); err != nil || len(again) != 0 {
		t.Errorf("a second owner claimed %+v, %v while the leases run", again, err)
	}
	must(t, a.Finish(ctx, "two", "evt_1", "ops", store.AlertDelivered, 1, ""))
	must(t, a.Finish(ctx, "one", "evt_1", "ops", store.AlertDelivered, 2, ""))
	must(t, a.Finish(ctx, "one", "evt_1", "ops", store.AlertFailed, 9, "late")) // already finished: no change

	if added, err := a.Add(ctx, e3, []string{"ops"}); err != nil || !added {
		t.Fatalf("Add(evt/3) = %v, %v", added, err)
	}
	if got, err := a.Claim(ctx, "one", time.Millisecond, 10); err != nil || len(got) != 1 || got[0].Event.ID != "evt/3" {
		t.Fatalf("Claim(evt/3) = %+v, %v", got, err)
	}
	time.Sleep(20 * time.Millisecond) // the lease runs out: its owner died
	if got, err := a.Claim(ctx, "two", time.Hour, 10); err != nil || len(got) != 1 || got[0].Event.ID != "evt/3" {
		t.Fatalf("a claim after the lease ran out = %+v, %v; want evt/3", got, err)
	}
	must(t, a.Finish(ctx, "one", "evt/3", "ops", store.AlertDelivered, 1, "")) // no longer its lease
	must(t, a.Finish(ctx, "two", "evt/3", "ops", store.AlertFailed, 5, "webhook answered 500"))

	check := func(when string) {
		t.Helper()
		rec, err := a.Recent(ctx, 10)
		if err != nil || len(rec) != 4 {
			t.Fatalf("%s: Recent = %+v, %v; want 4 deliveries", when, rec, err)
		}
		if rec[0].Event.ID != "evt/3" || rec[0].State != store.AlertFailed || rec[0].Attempts != 5 || rec[0].LastError != "webhook answered 500" || rec[0].DoneAt == nil {
			t.Errorf("%s: newest %+v; want evt/3 failed after 5 attempts", when, rec[0])
		}
		if rec[1].Event.ID != "evt_2" || rec[1].State != store.AlertNone || !rec[1].Event.At.Equal(e2.At) {
			t.Errorf("%s: second %+v; want evt_2 without webhook", when, rec[1])
		}
		states := map[string]string{}
		for _, d := range rec[2:] {
			states[d.Event.ID+" "+d.Target] = d.State
			if d.Target == "ops" && d.Attempts != 2 {
				t.Errorf("%s: evt_1 to ops took %d attempts, want 2", when, d.Attempts)
			}
		}
		if states["evt_1 ops"] != store.AlertDelivered || states["evt_1 slack"] != store.AlertPending {
			t.Errorf("%s: evt_1's states %v", when, states)
		}
		if one, err := a.Recent(ctx, 1); err != nil || len(one) != 1 || one[0].Event.ID != "evt/3" {
			t.Errorf("%s: Recent(1) = %+v, %v", when, one, err)
		}
	}
	check("before a restart")
	b.reopen(t, h)
	a = h.r.Alerts
	check("after a restart")
	if added, err := a.Add(ctx, e1, []string{"ops"}); err != nil || added {
		t.Errorf("after a restart, Add(evt_1) = %v, %v; want a duplicate", added, err)
	}
}
