package routing

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"sync"
	"time"
)

// UpstreamState is the part of an upstream's state that may outlive a
// configuration: its breaker and its cooldown (see Config.States).
type UpstreamState struct {
	mu        sync.Mutex
	state     State
	openUntil time.Time
	probing   bool
	coolUntil time.Time
}

// NewUpstreamState returns the state of an upstream never tried: breaker
// closed, no cooldown.
func NewUpstreamState() *UpstreamState { return new(UpstreamState) }

// breaker is the state's breaker state.
func (s *UpstreamState) breaker() State {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state
}

// Identity names an upstream across configurations: a digest of its
// provider's name, the model sent upstream, its base URL and its key, so
// that it holds no secret. Two configurations' upstreams with the same
// identity are the same upstream (see Config.States).
func Identity(provider, upstreamModel, baseURL, apiKey string) string {
	h := sha256.New()
	for _, s := range []string{provider, upstreamModel, strings.TrimRight(baseURL, "/"), apiKey} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}
