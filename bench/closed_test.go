package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

// TestClosedLoop checks the closed-loop load against a server that takes
// a fixed time per answer: conns connections, each with one request at a
// time, so the throughput is about conns over the answer's time, and every
// request waits for the one before it on its connection.
func TestClosedLoop(t *testing.T) {
	var inFlight, most atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		_, _ = io.Copy(io.Discard, r.Body)
		time.Sleep(10 * time.Millisecond)
		_, _ = w.Write([]byte(`{"choices":[]}`))
	}))
	defer srv.Close()
	const conns = 4
	res := closedLoop(context.Background(), newClient(conns), request{URL: srv.URL, Body: []byte(`{}`)}, conns, 300*time.Millisecond, 5*time.Second)
	if res.Errors > 0 || res.OK < conns {
		t.Fatalf("%d answers, %d errors (%s)", res.OK, res.Errors, res.FirstError)
	}
	if m := most.Load(); m > conns {
		t.Errorf("%d requests in flight at once from %d connections", m, conns)
	}
	// Each connection sends at most one request per 10 ms answer.
	if limit := conns * int(res.Elapsed/(10*time.Millisecond)); res.OK > limit {
		t.Errorf("%d answers in %v from %d connections of 10 ms answers (at most %d): not a closed loop", res.OK, res.Elapsed, conns, limit)
	}
}
