package routing

import (
	"sync"
	"time"
)

// limiter bounds the requests in flight and the requests and estimated
// tokens per minute of a deployment or an upstream. Minutes are fixed
// windows: a limit lets its requests through at the start of each.
// Its zero value has no bounds.
type limiter struct {
	maxConcurrent, rpm, tpm int

	mu       sync.Mutex
	inflight int
	minute   int64 // unix minute of the counts
	reqs     int
	tokens   int64
}

// bounded reports whether l has any bound.
func (l *limiter) bounded() bool { return l.maxConcurrent > 0 || l.rpm > 0 || l.tpm > 0 }

// allows reports whether one more request of tokens fits at now.
func (l *limiter) allows(now time.Time, tokens int64) bool {
	if !l.bounded() {
		return true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.roll(now)
	switch {
	case l.maxConcurrent > 0 && l.inflight >= l.maxConcurrent:
		return false
	case l.rpm > 0 && l.reqs >= l.rpm:
		return false
	case l.tpm > 0 && l.tokens > 0 && l.tokens+tokens > int64(l.tpm):
		return false
	}
	return true
}

// take counts a request of tokens sent at now.
func (l *limiter) take(now time.Time, tokens int64) {
	if !l.bounded() {
		return
	}
	l.mu.Lock()
	l.roll(now)
	l.inflight++
	l.reqs++
	l.tokens += tokens
	l.mu.Unlock()
}

// done counts the end of a request.
func (l *limiter) done() {
	if !l.bounded() {
		return
	}
	l.mu.Lock()
	l.inflight--
	l.mu.Unlock()
}

// roll starts a new minute's counts when now is in a later minute.
func (l *limiter) roll(now time.Time) {
	if m := now.Unix() / 60; m != l.minute {
		l.minute, l.reqs, l.tokens = m, 0, 0
	}
}
