package tasks

import (
	"context"
	"errors"
	"time"

	"go.uber.org/zap"

	"github.com/caddy-air/caddy-air/apierror"
	"github.com/caddy-air/caddy-air/holds"
	"github.com/caddy-air/caddy-air/providers"
	"github.com/caddy-air/caddy-air/store"
)

// Estimate is what a create asks for, known once its body is valid: what
// its task will cost if it delivers what was asked.
type Estimate struct {
	// Model is the client's model id.
	Model string
	// Kind is "image" or "video".
	Kind string
	// Images is the number of images asked for (n, default 1); 0 for a
	// video.
	Images int
	// VideoSeconds is the duration of the video asked for (seconds or
	// duration, else the provider's default); 0 for images.
	VideoSeconds int64
}

// Hold is a task's claim on its owner's budget, taken before the task
// starts (Admit) and ended exactly once, by the service, when the task
// ends: with Charge when it succeeds, with Release when it fails or
// expires, with Cancel when the create is refused before a task exists.
type Hold interface {
	// Charge records c, the charge of the succeeded task, in place of
	// what the hold reserved. Like Biller.ChargeTask it is idempotent by
	// c.TaskID. The hold ends whatever it returns; on an error the
	// service charges the task through its Biller later.
	Charge(ctx context.Context, c Charge) error
	// Release ends the hold of a task that ended without a charge: the
	// reserved cost is given back, the created task still counts as a
	// request.
	Release()
	// Cancel ends the hold of a create refused before its task existed:
	// nothing counts.
	Cancel()
}

// Admit reserves what a create estimated at e may cost, or refuses it (a
// spend or rate limit reached). It is called once the body is valid,
// before the task is stored or anything is sent upstream.
type Admit func(e Estimate) (Hold, *apierror.Error)

// holdSweepInterval is how often the poller ends the holds of tasks that
// ended elsewhere (another instance finished them) or are gone.
const holdSweepInterval = 30 * time.Second

// estimate is what r asks for.
func (r *request) estimate() Estimate {
	e := Estimate{Model: r.model, Kind: r.route.Kind}
	if r.route.Kind == providers.KindImage {
		e.Images = max(r.n, 1)
		return e
	}
	e.VideoSeconds = r.seconds
	if e.VideoSeconds <= 0 {
		e.VideoSeconds = defaultVideoSeconds(r.route.Provider.Protocol)
	}
	return e
}

// Holds keeps the holds of running tasks, by task id. It outlives a
// Service: the Services of successive configs on one store share one
// Holds (Config.Holds), as they share the budgets the holds reserve, so
// that a config reload loses none. Holds are in memory: a restart loses
// those of running tasks, which are still charged when they succeed.
type Holds = holds.Set[Hold]

// NewHolds returns an empty Holds.
func NewHolds() *Holds { return holds.New[Hold]() }

// releaseHold ends the hold of task id, which ended without a charge.
func (s *Service) releaseHold(id string) {
	if h, _ := s.holds.Take(id); h != nil {
		h.Release()
	}
}

// sweepHolds releases the holds of tasks that ended without this service
// ending them (another poller of the store finished or failed them) or
// that are gone from the store: a hold never outlives its task.
func (s *Service) sweepHolds(ctx context.Context) {
	now := s.now()
	for _, id := range s.holds.IDs() {
		t, err := s.load(ctx, id)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			if ctx.Err() == nil {
				s.log.Warn("checking a held task", zap.String("task", id), zap.Error(err))
			}
			continue
		}
		if err == nil && !s.expired(t, now) && !t.holdEnded() {
			continue
		}
		s.releaseHold(id)
	}
}

// holdEnded reports whether t ended in a way that ends its hold: failed,
// or succeeded and charged (the charge went through someone else's
// hold, or none). A succeeded task whose charge is pending keeps it: its
// claimant charges through it.
func (t *Task) holdEnded() bool {
	return t.Status == StatusFailed || t.Status == StatusSucceeded && t.Billing != BillingPending
}
