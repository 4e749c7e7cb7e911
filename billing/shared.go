package billing

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/caddy-air/caddy-air/apierror"
	"github.com/caddy-air/caddy-air/store"
)

// Shared budgets: when several instances share a backend, each instance
// admits requests against slices of the budgets that it leases from the
// backend (store.Budgets.Reserve), in memory, and takes rate-limit units
// from the backend's shared buckets in small batches (sharedrate.go).
//
// A slice is a lease of part of a subject's remaining budget. A request is
// admitted only if its estimated cost fits in what is left of the slice;
// when it does not, the instance closes the slice and leases a new one
// (one transaction, on the request's path). A closed slice gives back at
// once, in the background, all but what its requests may still add to
// the spend (the estimates of those in flight and the costs not yet in
// the backend's spend counters), shrinking again as they settle and
// their records reach the backend, and is released once its last
// request's record is there (sharedreturn.go). So the room that an
// instance holds beyond its requests is at most its open slice. Since
// every admitted request's estimate is covered by an unexpired lease, and
// the backend never grants more room than the limit minus the spend minus
// the live leases, the spend of a budget exceeds its limit, across all
// instances, by at most what the requests in flight cost beyond their
// estimates.
//
// Slices are extended while in use and expire a lease period
// (SharedConfig.LeaseTTL) after their instance stopped extending them (it
// died), freeing their room.

// Tunables of shared budgets.
const (
	// DefaultLeaseTTL is how long a slice lasts unless extended. A slice
	// is extended once less than 2/3 of it is left, and an open slice
	// unused for 1/3 of it is released, so that an idle instance holds no
	// room that others could use.
	DefaultLeaseTTL = 30 * time.Second
	// sliceParts is the slice size as a part of the limit: a slice is
	// 1/sliceParts of the smallest spend limit, and at least the estimate.
	sliceParts = 32
	// refusedFor is how long a budget found spent is refused without
	// asking the backend again: short, since the closed slices of other
	// instances give their room back within milliseconds.
	refusedFor = 250 * time.Millisecond
	// sharedTick is the longest period of the background work: extending
	// and releasing slices, handing rate corrections to the backend (a
	// quarter of the lease period if that is shorter).
	sharedTick = time.Second
	// limitsEvery is how often the limits are read again from the backend.
	limitsEvery = 5 * time.Second
	// backendTimeout bounds a backend call made on a request's path.
	backendTimeout = 5 * time.Second
)

// SharedConfig makes Budgets share its budgets and rate limits with the
// other instances of a backend (Budgets.Share).
type SharedConfig struct {
	// RateLimits are the backend's shared token buckets.
	RateLimits store.RateLimits
	// Flush waits until the records settled so far are in the backend's
	// spend counters (Ledger.Flush); a slice is released only after.
	Flush func(ctx context.Context) error
	// LeaseTTL is how long a slice outlives an instance that died; zero
	// means DefaultLeaseTTL.
	LeaseTTL time.Duration
}

// shared is the state of shared budgets.
type shared struct {
	rl    store.RateLimits
	flush func(context.Context) error
	ttl   time.Duration
	tick  time.Duration

	mu      sync.Mutex // guards slices, buckets and the slices' leases
	slices  map[sliceKey]*slice
	buckets map[string]*localBucket
	done    chan struct{} // closed when the background loop ended
	kick    chan struct{} // wakes the loop to return closed slices' room
}

// sliceKey names the slices of a subject's budget in a currency.
type sliceKey struct {
	sk       subjectKey
	currency string
}

// slice is an instance's part of one budget.
type slice struct {
	cur          *lease   // open lease new requests are admitted against
	closed       []*lease // leases waiting for their requests and release
	refusedUntil time.Time
	refill       chan struct{} // non-nil while a Reserve runs; closed after
	lastUse      time.Time
}

// lease is one lease of a slice and what was admitted against it.
type lease struct {
	l        store.Lease
	used     Amount // estimates of requests in flight plus settled costs
	inflight int
	// enqueued is the settled cost of the requests whose records the
	// ledger has taken, flushed the part of it known to be in the
	// backend's spend counters (which count it beside the lease).
	enqueued, flushed Amount
}

// Share makes b admit requests against leased slices of the budgets and
// shared rate limits, for a backend that several instances use, and starts
// the background work that extends and releases the slices until ctx
// ends. Call it once, before b serves requests; Close releases the slices.
// Limits set through other instances reach b within limitsEvery.
func (b *Budgets) Share(ctx context.Context, c SharedConfig) {
	sh := &shared{rl: c.RateLimits, flush: c.Flush, ttl: c.LeaseTTL, slices: map[sliceKey]*slice{}, buckets: map[string]*localBucket{},
		done: make(chan struct{}), kick: make(chan struct{}, 1)}
	if sh.ttl <= 0 {
		sh.ttl = DefaultLeaseTTL
	}
	sh.tick = min(sharedTick, sh.ttl/4)
	if sh.flush == nil {
		sh.flush = func(context.Context) error { return nil }
	}
	b.sh = sh
	go b.sharedLoop(ctx)
}

// sliceNeed is a slice a request must be admitted against.
type sliceNeed struct {
	key   sliceKey
	limit Limits
	est   Amount      // in key.currency
	pt    *PriceTable // its rates count other currencies' spend
}

// admitShared is admit on shared budgets.
func (b *Budgets) admitShared(subjects []subjectKey, pt *PriceTable, currency string, cost Amount, tokens int64) (*hold, *apierror.Error) {
	now := b.Now()
	tokens = clampTokens(tokens)
	var needs []sliceNeed
	limits := make([]Limits, len(subjects))
	b.mu.Lock()
	for i, sk := range subjects {
		acc := b.account(sk)
		if !acc.hasLimits {
			continue
		}
		limits[i] = acc.limits
		if acc.limits.Monthly == 0 && acc.limits.Total == 0 {
			continue
		}
		cur := acc.limits.Currency
		if cur == "" {
			cur = pt.Currency()
		}
		est := cost
		switch f, ok := pt.factor(currency, cur); {
		case currency == "":
			est = 0 // unpriced: admitted while the budget is not spent
		case !ok:
			b.mu.Unlock()
			return nil, unconvertible(sk, cur, currency)
		default:
			est = f.apply(cost)
		}
		needs = append(needs, sliceNeed{sliceKey{sk, cur}, acc.limits, max(est, 0), pt})
	}
	b.mu.Unlock()
	h := &hold{subjects: subjects, currency: currency, cost: cost, tokens: tokens, pt: pt}
	for _, n := range needs {
		l, err := b.sh.acquire(b, n, now)
		if err != nil {
			b.releaseShared(h, false)
			return nil, err
		}
		h.leases = append(h.leases, heldLease{key: n.key, l: l, est: n.est})
	}
	if err := b.sh.takeRates(h, subjects, limits, now); err != nil {
		b.releaseShared(h, true) // gives back the units of the other limits
		return nil, err
	}
	return h, nil
}

// heldLease is a request's claim on a lease.
type heldLease struct {
	key  sliceKey
	l    *lease
	est  Amount
	cost Amount // the settled cost counted against l, once settled
}

// acquire admits an estimate against n's slice, leasing a new slice when
// the open one has no room for it.
func (sh *shared) acquire(b *Budgets, n sliceNeed, now time.Time) (*lease, *apierror.Error) {
	for {
		sh.mu.Lock()
		s := sh.slices[n.key]
		if s == nil {
			s = &slice{}
			sh.slices[n.key] = s
		}
		if l := s.cur; l != nil && s.fits(l, n.est) && sh.fresh(l, now) {
			s.admit(l, n.est, now)
			sh.mu.Unlock()
			return l, nil
		}
		if now.Before(s.refusedUntil) {
			sh.mu.Unlock()
			return nil, overQuota(n.key.sk, spentPeriod(n.limit), limitOf(n.limit), n.key.currency)
		}
		if ch := s.refill; ch != nil {
			sh.mu.Unlock()
			<-ch
			continue
		}
		ch := make(chan struct{})
		s.refill = ch
		sh.mu.Unlock()
		want := max(limitOf(n.limit)/sliceParts, n.est, 1)
		ctx, cancel := context.WithTimeout(context.Background(), backendTimeout)
		got, err := b.s.Reserve(ctx, store.Subject{Scope: store.Scope(n.key.sk.scope), ID: n.key.sk.id}, n.key.currency, int64(want), now, sh.ttl,
			n.pt.storeRates(n.key.currency)...)
		cancel()
		sh.mu.Lock()
		s.refill = nil
		close(ch)
		if err != nil {
			sh.mu.Unlock()
			return nil, apierror.New(http.StatusServiceUnavailable, apierror.TypeServer, "budget_unavailable",
				"The budget could not be checked; please try again.")
		}
		if old := s.cur; old != nil {
			s.cur = nil
			sh.closeLease(s, old)
		}
		l := &lease{l: got}
		if got.Amount <= 0 || !s.fits(l, n.est) {
			// A lease too small for the request goes back at once, with
			// nothing admitted against it: kept, the last room of a budget
			// would lie in several instances' slices, none big enough.
			s.refusedUntil = now.Add(refusedFor)
			sh.mu.Unlock()
			if got.ID != "" {
				ctx, cancel := context.WithTimeout(context.Background(), backendTimeout)
				_ = b.s.Release(ctx, got.ID)
				cancel()
			}
			return nil, overQuota(n.key.sk, spentPeriod(n.limit), limitOf(n.limit), n.key.currency)
		}
		s.cur = l
		s.admit(l, n.est, now)
		sh.mu.Unlock()
		return l, nil
	}
}

// admit counts a request of estimate est, admitted at now, against l, the
// open lease of s. sh.mu must be held.
func (s *slice) admit(l *lease, est Amount, now time.Time) {
	l.used = l.used.addSat(est)
	l.inflight++
	s.lastUse = now
}

// fits reports whether an estimate fits in what is left of lease l, the
// open lease of s (or the one about to be): its amount minus what was admitted against it, minus
// the overage of s's closed leases (what their requests cost beyond
// their leases and the part of their costs already in the spend), which
// the backend counts only once they are released.
// Thus the requests admitted against s's unreleased leases never cost
// more than those leases' amounts, but for the excess of the requests in
// flight at the last admission. The sums saturate (Amount.addSat).
// sh.mu must be held.
func (s *slice) fits(l *lease, est Amount) bool {
	room := Amount(l.l.Amount).addSat(-l.used).addSat(-est)
	for _, c := range s.closed {
		room = room.addSat(-max(c.used.addSat(-c.flushed).addSat(-Amount(c.l.Amount)), 0))
	}
	return room >= 0
}

// settle replaces the estimate est of a request admitted against l by
// its cost. Like every sum of l's, used saturates at the bounds of int64:
// a cost at the largest int64 leaves no room, never wraps around to some.
func (l *lease) settle(cost, est Amount) { l.used = l.used.addSat(cost - est) }

// fresh reports whether lease l has at least a third of the lease period
// left at now, so that requests admitted against it settle before it
// expires while it is being extended. sh.mu must be held.
func (sh *shared) fresh(l *lease, now time.Time) bool { return l.l.Expires.Sub(now) >= sh.ttl/3 }

// closeLease moves l, no longer open, to s's closed leases, and wakes the
// background work to give back its unused room. sh.mu must be held.
func (sh *shared) closeLease(s *slice, l *lease) {
	s.closed = append(s.closed, l)
	sh.wake()
}

// wake asks the background loop to return the room of closed leases now.
func (sh *shared) wake() {
	select {
	case sh.kick <- struct{}{}:
	default:
	}
}

// limitOf is the smallest spend limit of lim.
func limitOf(lim Limits) Amount {
	switch {
	case lim.Monthly > 0 && lim.Total > 0:
		return min(lim.Monthly, lim.Total)
	case lim.Monthly > 0:
		return lim.Monthly
	}
	return lim.Total
}

// spentPeriod names the limit that limitOf returns.
func spentPeriod(lim Limits) string {
	if lim.Monthly > 0 && (lim.Total == 0 || lim.Monthly <= lim.Total) {
		return "monthly"
	}
	return "total"
}

// settleShared settles hold h on shared budgets with the settled record
// rec; ended ends its requests on their leases once rec is enqueued.
func (b *Budgets) settleShared(h *hold, rec *Record, counted bool) {
	now := b.Now()
	b.sh.mu.Lock()
	for i := range h.leases {
		hl := &h.leases[i]
		cost := Amount(0)
		if f, ok := h.pt.factor(rec.Currency, hl.key.currency); ok && counted && rec.Priced {
			cost = f.apply(rec.Cost)
		}
		hl.l.settle(cost, hl.est)
		hl.cost = cost
	}
	b.sh.mu.Unlock()
	if counted {
		b.sh.settleRates(h, rec, now)
		b.mu.Lock()
		for _, sk := range h.subjects {
			b.account(sk).addSpend(rec, now)
		}
		b.mu.Unlock()
	}
}

// charge counts rec, settled without a reservation (a task), in sk's open
// slice of its currency, so that this instance admits that much less
// until the slice is released (the backend counts it in the spend at
// once). sh.mu must not be held.
func (sh *shared) charge(sk subjectKey, rec *Record) {
	if !rec.Priced || rec.Cost <= 0 {
		return
	}
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if s := sh.slices[sliceKey{sk, rec.Currency}]; s != nil && s.cur != nil {
		s.cur.used = s.cur.used.addSat(rec.Cost)
	}
}

// endRequest drops a request from its lease, and wakes the background
// work if the lease is closed (its room can shrink). sh.mu must be held.
func (sh *shared) endRequest(hl heldLease) {
	hl.l.inflight--
	hl.l.enqueued = hl.l.enqueued.addSat(hl.cost)
	if s := sh.slices[hl.key]; s == nil || s.cur != hl.l {
		sh.wake()
	}
}

// releaseShared ends hold h on shared budgets without a record; rates
// gives back its request and tokens.
func (b *Budgets) releaseShared(h *hold, rates bool) {
	b.sh.mu.Lock()
	for _, hl := range h.leases {
		hl.l.used = hl.l.used.addSat(-hl.est)
		b.sh.endRequest(hl)
	}
	h.leases = nil
	b.sh.mu.Unlock()
	if rates {
		b.sh.giveRates(h)
	}
}
