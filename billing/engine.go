package billing

import (
	"context"
	"errors"
	"math"
	"sync"
	"time"

	"github.com/caddy-air/caddy-air/apierror"
)

// Engine prices requests, admits them against budgets and rate limits and
// settles them into the ledger. Create one per config: the price table may
// change on reload, while the Ledger and the Budgets are long-lived and
// shared by the engines of successive configs.
type Engine struct {
	prices  *PriceTable
	ledger  *Ledger
	budgets *Budgets
}

// Subject is who a request is billed to.
type Subject struct {
	// User owns the API key.
	User string
	// KeyID is the public id of the API key.
	KeyID string
	// Team is the user's team, "" if none. A request counts against the
	// team's limits and spend too (key ⊂ user ⊂ team).
	Team string
	// Tags label the request in the ledger (Record.Tags): the validated
	// x-air-tags header, or the key's default tags.
	Tags []string
}

// NewEngine returns an engine. pt may be nil (every model unpriced) and b
// may be nil (no limits); l is required.
func NewEngine(pt *PriceTable, l *Ledger, b *Budgets) *Engine {
	return &Engine{prices: pt, ledger: l, budgets: b}
}

// Prices returns the engine's price table.
func (e *Engine) Prices() *PriceTable { return e.prices }

// Ledger returns the engine's ledger.
func (e *Engine) Ledger() *Ledger { return e.ledger }

// Budgets returns the engine's budgets (nil if none).
func (e *Engine) Budgets() *Budgets { return e.budgets }

// Reservation is an admitted request's claim on its subject's budget and
// rate limits. End it exactly once, with Settle, Charge or Release; later
// calls are no-ops.
type Reservation struct {
	e     *Engine
	s     Subject
	model string
	h     *hold

	intent string // the ID of the request's intent, if any

	once  sync.Once
	rec   Record
	ack   *ack // the state of SettleDurable's record
	fresh bool
	err   error
}

// Admit checks s's spend and rate limits before a request for model
// reaches the upstream, and reserves the request's estimated cost and
// tokens. A request over a spend limit gets a 429 insufficient_quota
// error; one over a rate limit gets a 429 rate_limit_exceeded error with
// RetryAfter set.
func (e *Engine) Admit(ctx context.Context, s Subject, model string, estimate Usage) (*Reservation, *apierror.Error) {
	estimate = estimate.Bounded()
	return e.admit(s, model, e.prices.Quote(model, estimate), estimate.Total(), true)
}

// AdmitTask is Admit for an image or video task that is expected to yield
// the given number of images or milliseconds of video.
func (e *Engine) AdmitTask(ctx context.Context, s Subject, model string, images int, videoMillis int64) (*Reservation, *apierror.Error) {
	return e.admit(s, model, e.prices.QuoteTask(model, images, videoMillis), 0, false)
}

// AdmitBatch is Admit for a batch of requests for model that are
// estimated to use estimate in all, priced at serviceTier (the batch
// discount): it reserves the batch's cost until the batch ends. The
// batch counts as one request against the rate limits, its tokens do not
// (they are spread over hours), and it is not a request in flight.
func (e *Engine) AdmitBatch(ctx context.Context, s Subject, model string, estimate Usage, serviceTier string) (*Reservation, *apierror.Error) {
	estimate = estimate.Bounded()
	return e.admit(s, model, e.prices.quote(model, estimate, units{}, serviceTier), 0, false)
}

// maxHoldCost bounds what one request reserves: about 8,796 currency
// units, more than any real request's estimate, and small enough that a
// million requests in flight at once cannot overflow an account's
// reserved sum. An estimate beyond it (a max_tokens of 2^63-1) reserves
// this much: enough to stop the next requests of an account with a
// smaller limit, without wrapping the sum into room that is not there.
const maxHoldCost = Amount(math.MaxInt64 >> 20)

// admit reserves quote q and tokens for s; parallel counts the request in
// s's requests in flight (max_parallel_requests) until it ends.
func (e *Engine) admit(s Subject, model string, q Quote, tokens int64, parallel bool) (*Reservation, *apierror.Error) {
	r := &Reservation{e: e, s: s, model: model}
	if e.budgets == nil {
		return r, nil
	}
	q.Cost = min(max(q.Cost, 0), maxHoldCost)
	h, err := e.budgets.admit(subjectsOf(s), e.prices, q.Currency, q.Cost, tokens, parallel)
	if err != nil {
		return nil, err
	}
	r.h = h
	return r, nil
}

// price completes rec from the reservation and prices it.
func (r *Reservation) price(rec Record) Record {
	return r.e.price(r.complete(rec))
}

// complete fills what rec leaves out from the reservation: its user and
// key, and its model; the team and tags of the subject it was admitted
// for, when rec is that user's.
func (r *Reservation) complete(rec Record) Record {
	if rec.User == "" && rec.KeyID == "" {
		rec.User, rec.KeyID = r.s.User, r.s.KeyID
	}
	if rec.Team == "" && rec.User == r.s.User {
		rec.Team = r.s.Team
	}
	if rec.Tags == nil && rec.User == r.s.User {
		rec.Tags = r.s.Tags
	}
	if rec.Model == "" {
		rec.Model = r.model
	}
	return rec
}

// price fills rec's defaults and its Tier, Priced, Currency and Cost.
func (e *Engine) price(rec Record) Record {
	rec.fillDefaults(e.now())
	rec.applyQuote(e.prices.QuoteRecord(&rec))
	return rec
}

// now is the budgets' clock, or the wall clock without budgets.
func (e *Engine) now() time.Time {
	if e.budgets != nil && e.budgets.Now != nil {
		return e.budgets.Now()
	}
	return time.Now()
}

// Settle prices rec, queues its ledger write without waiting for it, and
// turns the reservation into spend. It returns the priced record. User,
// KeyID and Model default to the reservation's; a record without an ID
// gets a random one. rec.ID must be new, like a request's random ID: the
// record is appended, not looked up (tasks, whose IDs may come again, use
// Charge). If the write fails, the failure is logged and the spend still
// counts in memory.
func (r *Reservation) Settle(rec Record) Record {
	r.once.Do(func() {
		r.rec = r.price(rec)
		if b := r.e.budgets; b != nil && r.h != nil {
			b.settle(r.h, &r.rec, true)
		}
		r.e.ledger.Enqueue(r.rec, nil)
		r.ended()
	})
	return r.rec
}

// Intend records, before the request reaches an upstream, the record it
// leaves if the gateway dies before settling it (Ledger.Intend): rec with
// the reservation's subject and model, usage estimated from the request.
// Settle, SettleDurable or Release resolve it.
func (r *Reservation) Intend(rec Record) error {
	if rec.User == "" && rec.KeyID == "" {
		rec.User, rec.KeyID = r.s.User, r.s.KeyID
	}
	if rec.Team == "" && rec.User == r.s.User {
		rec.Team = r.s.Team
	}
	if rec.Tags == nil {
		rec.Tags = r.s.Tags
	}
	if rec.Model == "" {
		rec.Model = r.model
	}
	rec.Outcome, rec.Source = OutcomeInterrupted, SourceEstimated
	if err := r.e.ledger.Intend(rec); err != nil {
		return err
	}
	r.intent = rec.ID
	return nil
}

// SettleDurable is Settle that waits until the record is written as the
// ledger's Durability says (in the journal, or synced), ctx ends, or wait
// passes, whichever comes first. A caller holds back the last bytes of
// its response until it returns nil, so that a client never holds a
// complete answer whose record could still be lost. Failed writes do not
// end the wait: the writer tries the record again within it. If wait
// passes first, the error tells the caller to give its client an error
// instead of the answer, and the record is written with outcome withheld,
// unbilled (see OutcomeWithheld): a client is never billed for an answer
// it was refused; the record returned is then the withheld one. If ctx
// ends first (the client left), the record is written as it was settled.
func (r *Reservation) SettleDurable(ctx context.Context, rec Record, wait time.Duration) (Record, error) {
	r.once.Do(func() {
		r.rec = r.price(rec)
		if b := r.e.budgets; b != nil && r.h != nil {
			b.settle(r.h, &r.rec, true)
		}
		r.ack = r.e.ledger.enqueueDurable(r.rec)
		r.ended()
	})
	if r.ack == nil {
		// Ended before without waiting (Settle, Charge, Release): there
		// is no record to wait for.
		return r.rec, errNotDurable
	}
	err := r.ack.wait(ctx, wait)
	if errors.Is(err, errNotDurable) {
		// Withheld: the record is written so, and so is what the caller
		// logs and counts.
		out := r.rec
		withhold(&out)
		return out, err
	}
	return r.rec, err
}

// ended tells shared budgets that the reservation's record is in the
// ledger (queued or written), after settling it.
func (r *Reservation) ended() {
	if b := r.e.budgets; b != nil && r.h != nil {
		b.ended(r.h)
	}
}

// errNotDurable reports a record the storage did not take in time.
var errNotDurable = errorString("the ledger could not make the record durable in time")

// Charge is Settle with a synchronous ledger write, for tasks. It reports
// whether the record was new. On a write error the reservation is dropped
// and nothing is counted.
func (r *Reservation) Charge(ctx context.Context, rec Record) (Record, bool, error) {
	return r.ChargeWith(ctx, r.e, rec)
}

// ChargeWith is Charge priced by e: the engine of the config current when
// a task admitted under an earlier one ends, so that it is priced like a
// task charged without a reservation. e must share r's ledger and
// budgets (the engines of one state do); another engine, or nil, means
// r's own.
func (r *Reservation) ChargeWith(ctx context.Context, e *Engine, rec Record) (Record, bool, error) {
	if e == nil || e.ledger != r.e.ledger || e.budgets != r.e.budgets {
		e = r.e
	}
	r.once.Do(func() {
		r.rec = e.price(r.complete(rec))
		r.fresh, r.err = r.e.ledger.Write(ctx, r.rec)
		if b := r.e.budgets; b != nil && r.h != nil {
			b.settle(r.h, &r.rec, r.fresh && r.err == nil)
		}
		r.ended()
	})
	return r.rec, r.fresh, r.err
}

// Defer keeps the reservation of a request that reached the upstream and
// is billed later, under its own record id, by whoever sees it finish (a
// background response): it no longer counts in max_parallel_requests, as
// its exchange has ended; its intent is abandoned, so that a stop does not
// record it interrupted under that id, while its reserved cost stays
// held until ChargeWith or ReleaseCost ends it. Call it before the
// reservation is shared.
func (r *Reservation) Defer() {
	if b := r.e.budgets; b != nil && r.h != nil {
		b.endParallel(r.h) // the exchange has ended
	}
	if r.intent != "" {
		r.e.ledger.Abandon(r.intent)
		r.intent = ""
	}
}

// Release ends a reservation whose request never reached the upstream:
// nothing is recorded and the reserved cost, request and tokens are given
// back.
func (r *Reservation) Release() { r.release(true) }

// ReleaseCost ends a reservation whose request reached the upstream but is
// charged later, when its result is known (a task): the reserved cost is
// given back, while the request and its tokens stay counted against the
// rate limits.
func (r *Reservation) ReleaseCost() { r.release(false) }

// release ends the reservation without a record, giving back its cost and,
// when rates is set, its request and tokens.
func (r *Reservation) release(rates bool) {
	r.once.Do(func() {
		if r.intent != "" {
			r.e.ledger.Abandon(r.intent)
		}
		if b := r.e.budgets; b != nil && r.h != nil {
			b.release(r.h, rates)
		}
	})
}

// SettleInterrupted records, priced, the requests that an earlier run of
// the gateway left unsettled when it stopped (Ledger.SettleInterrupted).
func (e *Engine) SettleInterrupted(ctx context.Context) (int, error) {
	return e.ledger.SettleInterrupted(ctx, e.price)
}

// Charge prices rec and writes it to the ledger synchronously, without a
// reservation (for tasks settled after a restart, say). It returns the
// priced record and whether it was new; a record whose ID the ledger
// already holds is not counted again.
func (e *Engine) Charge(ctx context.Context, rec Record) (Record, bool, error) {
	rec = e.price(rec)
	fresh, err := e.ledger.Write(ctx, rec)
	if err != nil {
		return rec, false, err
	}
	if fresh && e.budgets != nil {
		e.budgets.record(&rec)
	}
	return rec, fresh, nil
}
