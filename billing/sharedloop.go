package billing

import (
	"context"
	"errors"
	"time"

	"github.com/caddy-air/caddy-air/store"
)

// sharedLoop extends and releases slices, hands rate corrections to the
// backend and reloads the limits, every sharedTick until ctx ends; woken
// by a closed slice (sh.kick), it returns closed slices' room at once.
func (b *Budgets) sharedLoop(ctx context.Context) {
	defer close(b.sh.done)
	t := time.NewTicker(b.sh.tick)
	defer t.Stop()
	var lastLimits time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-b.sh.kick:
			b.returnRoom(ctx)
			continue
		case <-t.C:
		}
		now := b.Now()
		b.maintainSlices(ctx, now)
		b.sh.flushRates(ctx, now)
		if now.Sub(lastLimits) >= limitsEvery {
			lastLimits = now
			_ = b.reloadLimits(ctx)
		}
	}
}

// maintainSlices closes idle slices, returns the room of closed ones
// (returnRoom) and extends the others.
func (b *Budgets) maintainSlices(ctx context.Context, now time.Time) {
	sh := b.sh
	var extend []*lease
	sh.mu.Lock()
	for _, s := range sh.slices {
		if s.cur != nil && s.cur.inflight == 0 && now.Sub(s.lastUse) >= sh.ttl/3 {
			l := s.cur
			s.cur = nil
			s.closed = append(s.closed, l)
		}
		for _, l := range append([]*lease{s.cur}, s.closed...) {
			if l != nil && l.l.Expires.Sub(now) < sh.ttl*2/3 {
				extend = append(extend, l)
			}
		}
	}
	sh.mu.Unlock()
	for _, l := range extend {
		until := now.Add(sh.ttl)
		err := b.s.Extend(ctx, l.l.ID, until)
		sh.mu.Lock()
		switch {
		case err == nil:
			l.l.Expires = until
		case errors.Is(err, store.ErrNotFound):
			// Expired (the instance stalled): its room may be taken; stop
			// admitting against it.
			l.l.Amount = 0
		}
		sh.mu.Unlock()
	}
	b.returnRoom(ctx)
}

// reloadLimits reads every subject's limits from the backend, so that
// limits set through other instances apply here too.
func (b *Budgets) reloadLimits(ctx context.Context) error {
	got := map[subjectKey]Limits{}
	err := b.s.Limits(ctx, func(s store.Subject, l store.Limits) error {
		got[subjectKey{Scope(s.Scope), s.ID}] = limitsFromStore(l)
		return nil
	})
	if err != nil {
		return err
	}
	b.setMu.Lock()
	defer b.setMu.Unlock()
	b.mu.Lock()
	defer b.mu.Unlock()
	for sk, acc := range b.accounts {
		if _, ok := got[sk]; !ok && acc.hasLimits {
			acc.limits, acc.hasLimits = Limits{}, false
		}
	}
	for sk, lim := range got {
		acc := b.account(sk)
		if !acc.hasLimits || acc.limits != lim {
			acc.limits, acc.hasLimits = lim, true
			b.sh.forget(sk)
		}
	}
	return nil
}

// forget drops the refusal of sk's budgets, after its limits changed.
func (sh *shared) forget(sk subjectKey) {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	for k, s := range sh.slices {
		if k.sk == sk {
			s.refusedUntil = time.Time{}
		}
	}
}

// Close releases b's slices of shared budgets, once the ledger has
// written the records settled against them (close the Ledger first) and
// the context given to Share has ended (it waits for the background work
// to stop, at most until ctx ends). It is a no-op for budgets that are not
// shared.
func (b *Budgets) Close(ctx context.Context) error {
	if b.sh == nil {
		return nil
	}
	sh := b.sh
	select { // the loop must not extend what is released below
	case <-sh.done:
	case <-ctx.Done():
		return ctx.Err()
	}
	var ids []string
	sh.mu.Lock()
	for k, s := range sh.slices {
		for _, l := range append([]*lease{s.cur}, s.closed...) {
			if l != nil && l.l.ID != "" {
				ids = append(ids, l.l.ID)
			}
		}
		delete(sh.slices, k)
	}
	sh.mu.Unlock()
	var errs []error
	for _, id := range ids {
		errs = append(errs, b.s.Release(ctx, id))
	}
	return errors.Join(errs...)
}
