package reqlog

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/caddy-air/caddy-air/store"
)

// Entry is a log to store: Log without its bodies, and the bodies as
// captured (raw: the queue reassembles and redacts them).
type Entry struct {
	Log               store.RequestLog
	Request, Response []byte
	// TTL and Redactor, if set, replace the queue's for this log (the
	// config's bounds when it was captured).
	TTL      time.Duration
	Redactor *Redactor
	// Final makes the log replace only the response of the log stored
	// under its id, keeping that log's request (a background response,
	// logged at its create and again when billed); with none stored, it
	// is stored with RequestNotKept.
	Final bool
}

// Queue stores request logs in the background, so that keeping one never
// delays an answer: the stream reassembly, the redaction and the store
// write all run on its goroutine. It holds at most its size of logs
// waiting; a log that finds it full is dropped and counted.
type Queue struct {
	repo    store.RequestLogs
	red     *Redactor
	ch      chan Entry
	ttl     time.Duration
	dropped atomic.Int64
	failed  atomic.Int64
	done    chan struct{}
	once    sync.Once
}

// NewQueue starts a queue of size logs that redacts each with red and
// Puts it into repo for ttl.
func NewQueue(repo store.RequestLogs, red *Redactor, size int, ttl time.Duration) *Queue {
	q := &Queue{repo: repo, red: red, ch: make(chan Entry, size), ttl: ttl, done: make(chan struct{})}
	go q.run()
	return q
}

func (q *Queue) run() {
	defer close(q.done)
	for e := range q.ch {
		l, red, ttl := e.Log, q.red, q.ttl
		if e.Redactor != nil {
			red = e.Redactor
		}
		if e.TTL > 0 {
			ttl = e.TTL
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if e.Final {
			l = q.final(ctx, l)
		} else {
			l.Request = storable(red.Redact(e.Request))
		}
		l.Response = storable(red.Redact(Reassemble(e.Response)))
		if err := q.repo.Put(ctx, l, ttl); err != nil {
			q.failed.Add(1)
		}
		cancel()
	}
}

// final is l with the request of the log stored under its id, or marked
// RequestNotKept if none is.
func (q *Queue) final(ctx context.Context, l store.RequestLog) store.RequestLog {
	prev, err := q.repo.Get(ctx, l.RequestID)
	if err != nil {
		l.RequestNotKept = true
		return l
	}
	l.Team, l.Time = prev.Team, prev.Time
	l.Request, l.RequestTruncated, l.RequestNotKept = prev.Request, prev.RequestTruncated, prev.RequestNotKept
	return l
}

// Enqueue hands e to the queue without waiting; it reports false (and
// counts a drop) when the queue is full or closed. The queue owns e's
// bodies from then on.
func (q *Queue) Enqueue(e Entry) (ok bool) {
	defer func() {
		if recover() != nil { // closed
			ok = false
			q.dropped.Add(1)
		}
	}()
	select {
	case q.ch <- e:
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

// storable is b as text every store accepts: valid UTF-8, NUL bytes
// (which PostgreSQL's jsonb refuses) replaced by U+FFFD.
func storable(b []byte) string {
	return strings.ToValidUTF8(strings.ReplaceAll(string(b), "\x00", "\uFFFD"), "\uFFFD")
}

// Close stores the logs still waiting, then stops.
func (q *Queue) Close() {
	q.once.Do(func() { close(q.ch) })
	<-q.done
}
