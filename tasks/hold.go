package tasks

import (
	"context"
	"errors"
	"net/http"
	"time"

	"go.uber.org/zap"

	"github.com/caddy-air/caddy-air/apierror"
	"github.com/caddy-air/caddy-air/billing"
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
// ends: with Charge (the task's Charge.Record) when it succeeds, with
// Release when it fails or expires, with Cancel when the create is
// refused before a task exists. On a failed Charge the service charges
// the task through its Biller later.
type Hold = holds.Hold

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
type Holds = holds.Set

// NewHolds returns an empty Holds.
func NewHolds() *Holds { return holds.New() }

// releaseHold ends the hold of task id, which ended without a charge.
func (s *Service) releaseHold(id string) { s.holds.Release(id) }

// sweepHolds releases the holds of tasks that ended without this service
// ending them (another poller of the store finished or failed them) or
// that are gone from the store: a hold never outlives its task.
func (s *Service) sweepHolds(ctx context.Context) {
	now := s.now()
	s.holds.Sweep(ctx, func(ctx context.Context, id string) (bool, error) {
		t, err := s.load(ctx, id)
		if errors.Is(err, store.ErrNotFound) {
			return true, nil
		}
		if err != nil {
			return false, err
		}
		return s.expired(t, now) || t.holdEnded(), nil
	}, func(id string, err error) {
		s.log.Warn("checking a held task", zap.String("task", id), zap.Error(err))
	})
}

// Record is the ledger record of c, the charge of a succeeded task.
func (c Charge) Record() billing.Record {
	rec := billing.Record{
		ID:          c.TaskID,
		Endpoint:    billing.EndpointTasks,
		User:        c.User,
		KeyID:       c.KeyID,
		Model:       c.Model,
		Provider:    c.Provider,
		Deployment:  c.Deployment,
		ServedModel: c.ServedModel,
		Source:      billing.SourceUnits,
		Status:      http.StatusOK,
		Outcome:     billing.OutcomeOK,
		Images:      c.Images,
		VideoMillis: c.VideoSeconds * 1000,
		Usage:       c.Usage,
	}
	// How long the task took, from its create until it succeeded.
	if c.Duration > 0 {
		rec.DurationMillis = max(c.Duration.Milliseconds(), 1)
	}
	return rec
}

// holdEnded reports whether t ended in a way that ends its hold: failed,
// or succeeded and charged (the charge went through someone else's
// hold, or none). A succeeded task whose charge is pending keeps it: its
// claimant charges through it.
func (t *Task) holdEnded() bool {
	return t.Status == StatusFailed || t.Status == StatusSucceeded && t.Billing != BillingPending
}
