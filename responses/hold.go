package responses

import (
	"context"
	"errors"
	"time"

	"go.uber.org/zap"

	"github.com/caddy-air/caddy-air/billing"
	"github.com/caddy-air/caddy-air/holds"
	"github.com/caddy-air/caddy-air/store"
)

// Hold is a background response's claim on its owner's budget: the
// reservation of its create, kept while the response runs and ended
// exactly once, by whoever bills it (the Poller, or a client's retrieval
// through Poller.Settle) with Charge, or with Release by the sweep that
// finds it billed elsewhere or gone. On a failed Charge the response
// stays pending and is billed through the Biller later.
type Hold = holds.Hold

// Holds keeps the holds of running background responses, by response
// id. It outlives a Poller: the Pollers of successive configs on one
// store share one (Config.Holds), as they share the budgets the holds
// reserve, so that a config reload loses none. A restart loses them: the
// responses are still billed when they finish, but hold nothing until
// then.
type Holds = holds.Set

// NewHolds returns an empty Holds.
func NewHolds() *Holds { return holds.New() }

// holdSweepInterval is how often the poller ends the holds of responses
// that were billed elsewhere (another instance) or are gone.
const holdSweepInterval = 30 * time.Second

// Hold keeps h, the hold of background response id, until the response
// is billed. Call it once the response is registered pending (a hold
// kept before could be released by a sweep that finds no response yet):
// a poll that bills the response first charges it through the Biller,
// and the next sweep gives h back, so the two count both for that while,
// never neither.
func (p *Poller) Hold(id string, h Hold) { p.c.Holds.Keep(id, h) }

// Settle is the package's Settle through the Poller's Biller, charged
// through the response's hold when one is kept.
func (p *Poller) Settle(ctx context.Context, id string, ref Ref, rec billing.Record) error {
	return Settle(ctx, p.c.Store, p.biller(id), id, ref, rec, p.c.Now())
}

// biller is the Biller of response id: its hold, taken when the charge
// is made, or the Poller's Biller if it has none (or lost it to an
// earlier attempt).
func (p *Poller) biller(id string) Biller {
	return heldBiller{holds: p.c.Holds, id: id, b: p.c.Biller}
}

// heldBiller charges through the hold of response id if one is kept, and
// through b otherwise.
type heldBiller struct {
	holds *Holds
	id    string
	b     Biller
}

// Charge implements Biller.
func (hb heldBiller) Charge(ctx context.Context, rec billing.Record) error {
	if held, err := hb.holds.Charge(ctx, hb.id, rec); held {
		return err
	}
	return hb.b.Charge(ctx, rec)
}

// release gives back the hold of response id, if one is kept.
func (p *Poller) release(id string) { p.c.Holds.Release(id) }

// SweepHolds releases the holds of responses that are no longer pending
// without this instance having billed them (another instance's poller
// or retrieval did) or that are gone from the store: a hold never
// outlives its response.
func (p *Poller) SweepHolds(ctx context.Context) {
	p.c.Holds.Sweep(ctx, func(ctx context.Context, id string) (bool, error) {
		b, err := p.c.Store.Get(ctx, id)
		if errors.Is(err, store.ErrNotFound) {
			return true, nil
		}
		if err != nil {
			return false, err
		}
		ref, derr := Decode(b)
		return derr != nil || !ref.Unbilled, nil
	}, func(id string, err error) {
		p.c.Logger.Warn("checking a held background response", zap.String("response", id), zap.Error(err))
	})
}

// Interface guards.
var _ Biller = heldBiller{}
