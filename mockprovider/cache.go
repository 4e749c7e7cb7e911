package mockprovider

import (
	"sync"
	"time"
)

// maxCacheEntries bounds the prompt prefixes the mock remembers.
const maxCacheEntries = 1 << 14

// prefixCache remembers hashes of prompt prefixes, as a provider's prompt
// cache would, each until its TTL runs out. When full, it forgets the
// oldest prefix first.
type prefixCache struct {
	mu      sync.Mutex
	expires map[uint64]time.Time
	ring    []uint64 // insertion order; each key has exactly one slot
	next    int
	max     int
}

// newPrefixCache returns a cache holding at most size prefixes.
func newPrefixCache(size int) *prefixCache {
	return &prefixCache{expires: make(map[uint64]time.Time, 64), ring: make([]uint64, 0, 64), max: size}
}

// lookupAndMark returns the index of the last of keys that is cached at
// now, or -1 when none is, and then caches every key until now+ttl.
func (c *prefixCache) lookupAndMark(keys []uint64, now time.Time, ttl time.Duration) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	hit := -1
	for i, k := range keys {
		if exp, ok := c.expires[k]; ok && now.Before(exp) {
			hit = i
		}
	}
	for _, k := range keys {
		c.put(k, now.Add(ttl))
	}
	return hit
}

// put caches k until exp; c.mu must be held.
func (c *prefixCache) put(k uint64, exp time.Time) {
	if old, ok := c.expires[k]; ok {
		if exp.After(old) {
			c.expires[k] = exp
		}
		return
	}
	if len(c.ring) < c.max {
		c.ring = append(c.ring, k)
	} else {
		delete(c.expires, c.ring[c.next])
		c.ring[c.next] = k
		c.next = (c.next + 1) % len(c.ring)
	}
	c.expires[k] = exp
}
