package postgres

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/caddy-air/caddy-air/alerts"
	"github.com/caddy-air/caddy-air/internal/pgtest"
)

// TestAlertsDeliveredOnceByTwoInstances runs two dispatchers, each on its
// own connection pool to one database, as two gateway instances: both
// raise the same events (each sees the same budget crossing) and some of
// their own, and the receiver gets every event exactly once.
func TestAlertsDeliveredOnceByTwoInstances(t *testing.T) {
	dsn := pgtest.DSN(t)
	var mu sync.Mutex
	got := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(time.Millisecond) // widen the window in which the other instance could claim it too
		mu.Lock()
		got[r.Header.Get(alerts.IDHeader)]++
		mu.Unlock()
	}))
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	var ds []*alerts.Dispatcher
	var obs []alerts.Outbox
	for range 2 {
		db, err := Open(context.Background(), Options{DSN: dsn})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		ob := db.Repos().Alerts
		obs = append(obs, ob)
		d := alerts.NewDispatcher(alerts.Config{Poll: 5 * time.Millisecond,
			Webhooks: []*alerts.Webhook{{Name: "ops", URL: srv.URL}}})
		ds = append(ds, d)
		wg.Add(1)
		go func() { defer wg.Done(); d.Run(ctx, ob) }()
	}
	want := map[string]bool{}
	for i := range 20 {
		id := fmt.Sprintf("evt_shared_%d", i)
		want[id] = true
		for _, d := range ds {
			d.Raise(alerts.Event{ID: id, Kind: alerts.KindBudget, Message: "shared"})
		}
		for j, d := range ds {
			own := fmt.Sprintf("evt_own_%d_%d", j, i)
			want[own] = true
			d.Raise(alerts.Event{ID: own, Kind: alerts.KindBreakerOpen, Message: "own"})
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		mu.Lock()
		n := len(got)
		mu.Unlock()
		if n >= len(want) || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond) // room for a wrong second delivery
	cancel()
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	for id := range want {
		if got[id] != 1 {
			t.Errorf("%s delivered %d times, want once", id, got[id])
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d events delivered, want %d", len(got), len(want))
	}
	rec, err := obs[0].Recent(context.Background(), 100)
	if err != nil || len(rec) != len(want) {
		t.Fatalf("Recent: %d deliveries, %v; want %d", len(rec), err, len(want))
	}
	for _, d := range rec {
		if d.State != alerts.StateDelivered || d.Attempts != 1 {
			t.Errorf("%s: %s after %d attempts, want delivered after 1", d.Event.ID, d.State, d.Attempts)
		}
	}
}
