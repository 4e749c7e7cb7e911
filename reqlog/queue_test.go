package reqlog

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/caddy-air/caddy-air/store"
)

// blockingLogs is a store.RequestLogs whose Put waits for release.
type blockingLogs struct {
	release chan struct{}
	mu      sync.Mutex
	put     []store.RequestLog
}

func (b *blockingLogs) Put(_ context.Context, l store.RequestLog, _ time.Duration) error {
	<-b.release
	b.mu.Lock()
	defer b.mu.Unlock()
	b.put = append(b.put, l)
	return nil
}

func (b *blockingLogs) Get(context.Context, string) (store.RequestLog, error) {
	return store.RequestLog{}, store.ErrNotFound
}

// TestQueueDropsWhenFull: with the store stuck, Enqueue never waits: the
// logs past the queue's size are dropped and counted; the queued ones are
// stored (reassembled and redacted) once the store moves, Close included.
func TestQueueDropsWhenFull(t *testing.T) {
	repo := &blockingLogs{release: make(chan struct{})}
	red, err := NewRedactor()
	if err != nil {
		t.Fatal(err)
	}
	q := NewQueue(repo, red, 2, time.Hour)
	stream := []byte("data: {\"choices\":[{\"delta\":{\"content\":\"hel\"}}]}\n\ndata: {\"choices\":[{\"delta\":{\"content\":\"lo\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
	accepted := 0
	for i := range 10 { // the worker takes one, the channel holds two
		if q.Enqueue(Entry{Log: store.RequestLog{RequestID: "r"}, Request: []byte(`{"k":"sk-abcdefghijkl` + string(rune('a'+i)) + "\x00\"}"), Response: stream}) {
			accepted++
		}
	}
	if accepted > 3 || q.Dropped() != int64(10-accepted) {
		t.Fatalf("accepted %d, dropped %d: want at most 3 accepted and the rest counted", accepted, q.Dropped())
	}
	close(repo.release)
	q.Close()
	if len(repo.put) != accepted {
		t.Fatalf("stored %d of %d accepted", len(repo.put), accepted)
	}
	l := repo.put[0]
	if strings.Contains(l.Request, "sk-abc") || !strings.Contains(l.Request, Redacted) || strings.ContainsRune(l.Request, 0) {
		t.Errorf("request not redacted or not storable: %q", l.Request)
	}
	if !strings.Contains(l.Response, `"content":"hello"`) {
		t.Errorf("response not reassembled: %s", l.Response)
	}
}

// mapLogs is a store.RequestLogs in a map.
type mapLogs struct {
	mu   sync.Mutex
	logs map[string]store.RequestLog
}

func (m *mapLogs) Put(_ context.Context, l store.RequestLog, _ time.Duration) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.logs[l.RequestID] = l
	return nil
}

func (m *mapLogs) Get(_ context.Context, id string) (store.RequestLog, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	l, ok := m.logs[id]
	if !ok {
		return l, store.ErrNotFound
	}
	return l, nil
}

// TestQueueFinal: a Final log (a background response's final answer)
// replaces the response of the log stored under its id and keeps its
// request, team and time; with none stored it is kept alone, marked
// RequestNotKept.
func TestQueueFinal(t *testing.T) {
	repo := &mapLogs{logs: map[string]store.RequestLog{}}
	red, err := NewRedactor()
	if err != nil {
		t.Fatal(err)
	}
	q := NewQueue(repo, red, 8, time.Hour)
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	q.Enqueue(Entry{Log: store.RequestLog{RequestID: "a", Team: "ads", Time: at, RequestTruncated: true},
		Request: []byte(`{"input":"hi sk-abcdefghijkl"}`), Response: []byte(`{"status":"queued"}`)})
	q.Enqueue(Entry{Log: store.RequestLog{RequestID: "a", Time: at.Add(time.Hour)}, Response: []byte(`{"status":"completed","k":"sk-abcdefghijkl"}`), Final: true})
	q.Enqueue(Entry{Log: store.RequestLog{RequestID: "b"}, Response: []byte(`{"status":"completed"}`), Final: true})
	q.Close()
	tests := []struct {
		id   string
		want store.RequestLog
	}{
		{"a", store.RequestLog{RequestID: "a", Team: "ads", Time: at, RequestTruncated: true,
			Request: `{"input":"hi ` + Redacted + `"}`, Response: `{"status":"completed","k":"` + Redacted + `"}`}},
		{"b", store.RequestLog{RequestID: "b", Response: `{"status":"completed"}`, RequestNotKept: true}},
	}
	for _, tt := range tests {
		if got := repo.logs[tt.id]; got != tt.want {
			t.Errorf("log %s:\n got %+v\nwant %+v", tt.id, got, tt.want)
		}
	}
}
