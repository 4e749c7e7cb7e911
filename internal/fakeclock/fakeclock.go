// Package fakeclock is a settable clock for tests, safe for concurrent use.
package fakeclock

import (
	"sync"
	"time"
)

// Clock is a clock that only moves when told to.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// New returns a clock that reads t.
func New(t time.Time) *Clock { return &Clock{now: t} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}
