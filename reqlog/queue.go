package reqlog

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/caddy-air/caddy-air/store"
)

// Queue stores request logs in the background, so that keeping one never
// delays an answer. It holds at most its size of logs waiting; a log that
// finds it full is dropped and counted.
type Queue struct {
	repo    store.RequestLogs
	ch      chan store.RequestLog
	ttl     time.Duration
	dropped atomic.Int64
	failed  atomic.Int64
	done    chan struct{}
	once    sync.Once
}

// NewQueue starts a queue of size logs that Puts each into repo for ttl.
func NewQueue(repo store.RequestLogs, size int, ttl time.Duration) *Queue {
	q := &Queue{repo: repo, ch: make(chan store.RequestLog, size), ttl: ttl, done: make(chan struct{})}
	go q.run()
	return q
}

func (q *Queue) run() {
	defer close(q.done)
	for l := range q.ch {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if err := q.repo.Put(ctx, l, q.ttl); err != nil {
			q.failed.Add(1)
		}
		cancel()
	}
}

// Enqueue hands l to the queue without waiting; it reports false (and
// counts a drop) when the queue is full or closed.
func (q *Queue) Enqueue(l store.RequestLog) (ok bool) {
	defer func() {
		if recover() != nil { // closed
			ok = false
			q.dropped.Add(1)
		}
	}()
	select {
	case q.ch <- l:
		return true
	default:
		q.dropped.Add(1)
		return false
	}
}

// Dropped is how many logs found the queue full; Failed how many the
// store refused.
func (q *Queue) Dropped() int64 { return q.dropped.Load() }

// Failed is how many logs the store refused.
func (q *Queue) Failed() int64 { return q.failed.Load() }

// Close stores the logs still waiting, then stops.
func (q *Queue) Close() {
	q.once.Do(func() { close(q.ch) })
	<-q.done
}
