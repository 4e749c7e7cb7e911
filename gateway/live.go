package gateway

import "sync/atomic"

// Live holds what a started config serves with right now, read by the
// handlers on every request: the Shared it started on and its Services.
// A config's Live stays set after its Stop, since Caddy stops a config's
// apps in no set order and its HTTP servers may still take requests on
// open connections: during a reload they are served as usual, and once
// the Shared closed (the last config let go and the last exchange ended)
// Load returns nothing and they are refused.
type Live struct {
	shared   atomic.Pointer[Shared]
	services atomic.Pointer[Services]
	// stopped is set by the first Stop, which releases the Shared once.
	stopped atomic.Bool
}

// Set publishes s, started on its Shared, to the handlers.
func (l *Live) Set(s *Services) {
	l.shared.Store(s.shared)
	l.services.Store(s)
}

// Load returns the Shared and Services a request is served with, or nils
// before Set and once the Shared closed.
func (l *Live) Load() (*Shared, *Services) {
	sh := l.shared.Load()
	if sh == nil || sh.Closed() {
		return nil, nil
	}
	return sh, l.services.Load()
}

// Shared returns the Shared of Load, or nil.
func (l *Live) Shared() *Shared {
	sh, _ := l.Load()
	return sh
}

// Services returns the Services of Load, or nil.
func (l *Live) Services() *Services {
	_, s := l.Load()
	return s
}

// Stop returns the Services last Set, even once its Shared closed (nil
// before Set), and reports whether this is the first Stop of them: only
// that one lets go of the Shared.
func (l *Live) Stop() (s *Services, first bool) {
	s = l.services.Load()
	if s == nil {
		return nil, false
	}
	return s, !l.stopped.Swap(true)
}
