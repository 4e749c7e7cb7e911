package gateway

import (
	"context"

	"github.com/caddy-air/caddy-air/apierror"
	"github.com/caddy-air/caddy-air/billing"
	"github.com/caddy-air/caddy-air/holds"
	"github.com/caddy-air/caddy-air/tasks"
)

// budgetHold is a reservation on a caller's budgets held while the job
// it was made for runs: a task, a background response or a batch
// (holds.Hold).
type budgetHold struct {
	res *billing.Reservation
	s   *Services
}

// Hold returns the holds.Hold of res, a reservation made through s.
func (s *Services) Hold(res *billing.Reservation) holds.Hold { return budgetHold{res: res, s: s} }

// AdmitTask returns the tasks.Admit of a create by subj: it reserves the
// images or video seconds the create asks for against subj's spend
// limits, and counts the create as a request against its rate limits.
func (s *Services) AdmitTask(ctx context.Context, subj billing.Subject) tasks.Admit {
	return func(e tasks.Estimate) (tasks.Hold, *apierror.Error) {
		res, aerr := s.Billing.AdmitTask(ctx, subj, e.Model, e.Images, e.VideoSeconds*1000)
		if aerr != nil {
			return nil, aerr
		}
		return budgetHold{res: res, s: s}, nil
	}
}

// Charge implements holds.Hold: rec replaces the reservation, priced by
// the prices of the config that made it like a charge without one (none
// once its Shared closed), and a fresh charge counts in the model's
// metrics.
func (h budgetHold) Charge(ctx context.Context, rec billing.Record) error {
	var engine *billing.Engine
	if h.s.shared == nil || !h.s.shared.Closed() {
		engine = h.s.Billing
	}
	rec, fresh, err := h.res.ChargeWith(ctx, engine, rec)
	if err == nil && fresh {
		h.s.CountCharge(rec)
	}
	return err
}

// Release implements holds.Hold: a job that ended without a charge
// through its hold (failed, expired, billed elsewhere, gone) gives its
// reserved cost back and still counts as a request.
func (h budgetHold) Release() { h.res.ReleaseCost() }

// Cancel implements holds.Hold: a create refused before its job existed
// counts for nothing.
func (h budgetHold) Cancel() { h.res.Release() }

// Interface guards.
var _ holds.Hold = budgetHold{}
