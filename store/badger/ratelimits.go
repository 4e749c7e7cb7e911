package badger

import (
	"context"
	"sync"
	"time"

	"github.com/caddy-air/caddy-air/store"
)

// RateLimits is store.RateLimits in memory: one Badger store serves one
// instance, so its buckets are exact and need no storage. Buckets unused
// for longer than their window are dropped now and then.
type RateLimits struct {
	mu      sync.Mutex
	buckets map[string]*bucket
	swept   time.Time
}

// NewRateLimits returns empty rate limits.
func NewRateLimits() *RateLimits { return &RateLimits{buckets: map[string]*bucket{}} }

// bucket is a token bucket: level units, refilled at the bucket's limit
// per window up to the limit.
type bucket struct {
	level  float64
	last   time.Time
	window time.Duration
}

// get returns the bucket of key refilled to now. r.mu must be held.
func (r *RateLimits) get(key string, limit int64, window time.Duration, now time.Time) *bucket {
	if now.Sub(r.swept) > time.Minute {
		r.swept = now
		for k, b := range r.buckets {
			if now.Sub(b.last) > b.window {
				delete(r.buckets, k)
			}
		}
	}
	b := r.buckets[key]
	if b == nil {
		b = &bucket{level: float64(limit), last: now, window: window}
		r.buckets[key] = b
		return b
	}
	if el := now.Sub(b.last); el > 0 {
		b.level = min(float64(limit), b.level+float64(limit)*float64(el)/float64(window))
		b.last = now
	}
	b.window = window
	return b
}

// Take implements store.RateLimits.
func (r *RateLimits) Take(_ context.Context, key string, n, limit int64, window time.Duration, now time.Time) (time.Duration, error) {
	n = min(n, limit)
	r.mu.Lock()
	defer r.mu.Unlock()
	b := r.get(key, limit, window, now)
	if deficit := float64(n) - b.level; deficit > 0 {
		wait := time.Duration(deficit / float64(limit) * float64(window))
		return max(wait, time.Nanosecond), nil
	}
	b.level -= float64(n)
	return 0, nil
}

// Adjust implements store.RateLimits.
func (r *RateLimits) Adjust(_ context.Context, key string, n, limit int64, window time.Duration, now time.Time) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	b := r.get(key, limit, window, now)
	b.level = min(float64(limit), b.level+float64(n))
	return nil
}

// Interface guard.
var _ store.RateLimits = (*RateLimits)(nil)
