package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/caddy-air/caddy-air/store"
)

// RunRequestLogs checks store.RequestLogs: a log reads back as put, a
// second put replaces it, and it is gone once its TTL passes.
func RunRequestLogs(t *testing.T, b Backend) {
	h := b.open(t)
	if h.r.RequestLogs == nil {
		t.Fatal("the backend has no request logs")
	}
	ctx := context.Background()
	at := time.Date(2026, 11, 28, 1, 2, 3, 0, time.UTC)
	l := store.RequestLog{RequestID: "req_a", KeyID: "k1", User: "alice", Team: "t1", Time: at,
		Request: `{"model":"m"}`, Response: `{"content":"hi"}`, ResponseTruncated: true}
	must(t, h.r.RequestLogs.Put(ctx, l, time.Hour))
	got, err := h.r.RequestLogs.Get(ctx, "req_a")
	must(t, err)
	if got.KeyID != "k1" || got.User != "alice" || got.Team != "t1" || !got.Time.Equal(at) || string(got.Request) != `{"model":"m"}` ||
		string(got.Response) != `{"content":"hi"}` || !got.ResponseTruncated || got.RequestTruncated {
		t.Errorf("read back: %+v", got)
	}
	l.Response = `{"content":"again"}`
	must(t, h.r.RequestLogs.Put(ctx, l, time.Hour))
	if got, _ := h.r.RequestLogs.Get(ctx, "req_a"); string(got.Response) != `{"content":"again"}` {
		t.Errorf("after a second put: %s", got.Response)
	}
	if _, err := h.r.RequestLogs.Get(ctx, "req_none"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a missing log: %v", err)
	}
	l.RequestID = "req_short"
	must(t, h.r.RequestLogs.Put(ctx, l, time.Second))
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if _, err := h.r.RequestLogs.Get(ctx, "req_short"); errors.Is(err, store.ErrNotFound) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a log outlived its TTL of 1s")
		}
	}
}
