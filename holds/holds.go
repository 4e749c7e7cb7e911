// Package holds keeps budget holds by the id of the job they were taken
// for (a task, a background response, a batch) while it runs. Whoever
// ends the job first takes its hold (Take, Charge, Release) and ends it,
// so that a hold ends exactly once; a Set outlives the services of one
// config, so that a config reload loses none. Sets are in memory: a
// restart loses them.
package holds

import (
	"context"
	"sync"

	"github.com/caddy-air/caddy-air/billing"
)

// Hold is a job's claim on its owner's budget: the reservation taken
// when the job was admitted, before anything went upstream, kept while
// the job runs, and ended exactly once: with Charge when the job is
// billed, with Release when it ends without a charge through the hold,
// with Cancel when its create was refused before the job existed.
type Hold interface {
	// Charge records rec, the job's ledger record, in place of what the
	// hold reserved. It is idempotent by rec.ID, as the ledger is. The
	// hold ends whatever it returns; on an error the job is billed
	// later without it.
	Charge(ctx context.Context, rec billing.Record) error
	// Release ends the hold of a job that ended without a charge
	// through it (failed, expired, billed elsewhere, gone): the reserved
	// cost is given back, the job's create still counts as a request.
	Release()
	// Cancel ends the hold of a create refused before its job existed:
	// nothing counts.
	Cancel()
}

// Set is a registry of holds by job id. Its zero value is not usable:
// use New.
type Set struct {
	mu sync.Mutex
	m  map[string]Hold
}

// New returns an empty Set.
func New() *Set { return &Set{m: map[string]Hold{}} }

// Len returns the number of holds kept.
func (s *Set) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.m)
}

// Keep registers h, the hold of id, until it is taken. A hold kept again
// under the same id replaces the first; a nil h is not kept.
func (s *Set) Keep(id string, h Hold) {
	if h == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[id] = h
}

// Take removes and returns the hold of id, and whether there was one
// (none: never held, or already taken). Whoever takes a hold ends it.
func (s *Set) Take(id string) (Hold, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	h, ok := s.m[id]
	delete(s.m, id)
	return h, ok
}

// IDs returns the ids whose holds are kept.
func (s *Set) IDs() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := make([]string, 0, len(s.m))
	for id := range s.m {
		ids = append(ids, id)
	}
	return ids
}

// Charge takes the hold of id and charges rec through it, reporting
// whether a hold was kept; with none, the caller bills rec otherwise.
func (s *Set) Charge(ctx context.Context, id string, rec billing.Record) (bool, error) {
	h, ok := s.Take(id)
	if !ok {
		return false, nil
	}
	return true, h.Charge(ctx, rec)
}

// Release takes the hold of id, if one is kept, and releases it.
func (s *Set) Release(id string) {
	if h, ok := s.Take(id); ok {
		h.Release()
	}
}

// Sweep releases the hold of every job that ended reports ended (billed
// elsewhere, failed, gone from the store), so that no hold outlives its
// job. A job whose state ended cannot read keeps its hold until the next
// sweep; ended's error is handed to failed, with the job's id.
func (s *Set) Sweep(ctx context.Context, ended func(ctx context.Context, id string) (bool, error), failed func(id string, err error)) {
	for _, id := range s.IDs() {
		done, err := ended(ctx, id)
		if err != nil {
			if ctx.Err() == nil {
				failed(id, err)
			}
			continue
		}
		if done {
			s.Release(id)
		}
	}
}
