package billing

import "context"

// ended ends hold h's requests on their leases once its record is in the
// ledger's queue (Settle, SettleDurable) or written (Charge): from then
// on, a flush of the ledger puts its cost in the backend's spend
// counters, and its lease may give that cost back. A no-op for budgets
// that are not shared, and after the first call.
func (b *Budgets) ended(h *hold) {
	if b.sh == nil {
		return
	}
	b.sh.mu.Lock()
	defer b.sh.mu.Unlock()
	for _, hl := range h.leases {
		b.sh.endRequest(hl)
	}
	h.leases = nil
}

// returnRoom gives back, after a flush of the ledger, the room of closed
// leases that their requests no longer need: a lease whose requests have
// all ended is released, and one with requests in flight shrinks to their
// estimates plus the costs not yet in the backend's spend counters. If
// the flush fails, the leases keep their room until a later pass.
func (b *Budgets) returnRoom(ctx context.Context) {
	sh := b.sh
	type closed struct {
		s        *slice
		l        *lease
		enqueued Amount // l.enqueued before the flush: in the spend after it
		drained  bool   // no request in flight before the flush
	}
	var todo []closed
	sh.mu.Lock()
	for _, s := range sh.slices {
		for _, l := range s.closed {
			todo = append(todo, closed{s, l, l.enqueued, l.inflight == 0})
		}
	}
	sh.mu.Unlock()
	if len(todo) == 0 {
		return
	}
	if err := sh.flush(ctx); err != nil {
		return
	}
	type shrink struct {
		l      *lease
		amount Amount
	}
	var release []*lease
	var shrinks []shrink
	sh.mu.Lock()
	for _, c := range todo {
		c.l.flushed = max(c.l.flushed, c.enqueued)
		if c.drained {
			c.s.dropClosed(c.l)
			release = append(release, c.l)
			continue
		}
		if need := max(c.l.used.addSat(-c.l.flushed), 0); need < Amount(c.l.l.Amount) {
			shrinks = append(shrinks, shrink{c.l, need})
		}
	}
	sh.mu.Unlock()
	for _, c := range release {
		_ = b.s.Release(ctx, c.l.ID)
	}
	for _, c := range shrinks {
		if b.s.Shrink(ctx, c.l.l.ID, int64(c.amount)) == nil {
			sh.mu.Lock()
			c.l.l.Amount = min(c.l.l.Amount, int64(c.amount))
			sh.mu.Unlock()
		}
	}
}

// dropClosed removes l from s's closed leases. sh.mu must be held.
func (s *slice) dropClosed(l *lease) {
	kept := s.closed[:0]
	for _, c := range s.closed {
		if c != l {
			kept = append(kept, c)
		}
	}
	clear(s.closed[len(kept):])
	s.closed = kept
}
