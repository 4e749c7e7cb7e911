// Package mockcache is the prompt-cache memory of the fake providers
// (Bedrock's and Gemini's): which (model, prefix) pairs a request has
// already sent, so that a repeated prefix is reported as a cache read.
package mockcache

import (
	"crypto/sha256"
	"sync"
)

// maxCached bounds the prefixes a Prefixes remembers; past it, it
// forgets them all and starts again.
const maxCached = 1024

// Prefixes remembers cached prefixes. The zero value is ready to use and
// safe for concurrent use.
type Prefixes struct {
	mu   sync.Mutex
	seen map[[32]byte]bool
}

// Remember records prefix for model and reports whether it was already
// recorded.
func (p *Prefixes) Remember(model, prefix string) bool {
	k := sha256.Sum256([]byte(model + "\x00" + prefix))
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.seen[k] {
		return true
	}
	if p.seen == nil || len(p.seen) >= maxCached {
		p.seen = map[[32]byte]bool{}
	}
	p.seen[k] = true
	return false
}
