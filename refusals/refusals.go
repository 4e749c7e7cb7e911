// Package refusals keeps the requests the gateway refused by itself (a
// missing key, a bad body, a rate limit, a budget, an unknown model, no
// upstream) in a bounded in-memory log, so that the request id a client
// quotes can be found although such requests leave no ledger record: they
// are not billable, and a flood of them must cost no storage.
package refusals

import (
	"sync"
	"time"
)

// Entry is one refused request.
type Entry struct {
	// ID is the gateway's request id, the X-Request-Id the client got.
	ID string `json:"id"`
	// Time is when the request was refused (UTC).
	Time time.Time `json:"time"`
	// User and KeyID name the key's owner and id, when the key was valid.
	User  string `json:"user,omitempty"`
	KeyID string `json:"key_id,omitempty"`
	// Endpoint is the endpoint called (chat_completions, messages…).
	Endpoint string `json:"endpoint"`
	// Model is the configured model that would have served it, when known.
	Model string `json:"model,omitempty"`
	// Status is the HTTP status answered; Code and Message the error's.
	Status  int    `json:"status"`
	Code    string `json:"code,omitempty"`
	Message string `json:"message"`
}

// Filter selects entries: each field that is set must match.
type Filter struct {
	// ID selects one request; User one user's requests.
	ID, User string
	// Limit bounds the entries returned; 0 is all that match.
	Limit int
}

// Log is a ring of the last entries added. Its methods are safe for
// concurrent use.
type Log struct {
	mu   sync.Mutex
	buf  []Entry
	next int
	full bool
}

// New returns a log that keeps the last size entries.
func New(size int) *Log {
	return &Log{buf: make([]Entry, max(size, 1))}
}

// Add records e, dropping the oldest entry when the log is full.
func (l *Log) Add(e Entry) {
	l.mu.Lock()
	l.buf[l.next] = e
	l.next++
	if l.next == len(l.buf) {
		l.next, l.full = 0, true
	}
	l.mu.Unlock()
}

// List returns the entries f selects, newest first.
func (l *Log) List(f Filter) []Entry {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := l.next
	if l.full {
		n = len(l.buf)
	}
	out := []Entry{}
	for i := 0; i < n; i++ {
		e := l.buf[(l.next-1-i+len(l.buf))%len(l.buf)]
		if f.ID != "" && e.ID != f.ID || f.User != "" && e.User != f.User {
			continue
		}
		out = append(out, e)
		if f.Limit > 0 && len(out) == f.Limit {
			break
		}
	}
	return out
}

// Size is the number of entries the log keeps.
func (l *Log) Size() int { return len(l.buf) }
