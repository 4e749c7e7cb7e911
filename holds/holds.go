// Package holds keeps budget holds by the id of what they were taken
// for, a task or a background response, while it runs. Whoever ends the
// thing first takes its hold (Take) and ends it, so that a hold ends
// exactly once; a Set outlives the services of one config, so that a
// config reload loses none. Sets are in memory: a restart loses them.
package holds

import "sync"

// Set is a registry of holds of type H by id. Its zero value is not
// usable: use New.
type Set[H any] struct {
	mu sync.Mutex
	m  map[string]H
}

// New returns an empty Set.
func New[H any]() *Set[H] { return &Set[H]{m: map[string]H{}} }

// Len returns the number of holds kept.
func (s *Set[H]) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.m)
}

// Keep registers h, the hold of id, until Take removes it. A hold kept
// again under the same id replaces the first.
func (s *Set[H]) Keep(id string, h H) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[id] = h
}

// Take removes and returns the hold of id, and whether there was one
// (none: never held, or already taken). Whoever takes a hold ends it.
func (s *Set[H]) Take(id string) (H, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	h, ok := s.m[id]
	delete(s.m, id)
	return h, ok
}

// IDs returns the ids whose holds are kept.
func (s *Set[H]) IDs() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := make([]string, 0, len(s.m))
	for id := range s.m {
		ids = append(ids, id)
	}
	return ids
}
