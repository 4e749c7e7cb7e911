package caddymodule

import (
	"context"

	"github.com/caddy-air/caddy-air/apierror"
	"github.com/caddy-air/caddy-air/billing"
	"github.com/caddy-air/caddy-air/holds"
	"github.com/caddy-air/caddy-air/tasks"
)

// budgetHold is a reservation on a caller's budgets held while the job
// it was made for runs: a task, or a background response (holds.Hold).
type budgetHold struct {
	res *billing.Reservation
	app *App
}

// admitTask returns the tasks.Admit of a create by s: it reserves the
// images or video seconds the create asks for against s's spend limits,
// and counts the create as a request against its rate limits.
func (a *App) admitTask(ctx context.Context, engine *billing.Engine, s billing.Subject) tasks.Admit {
	return func(e tasks.Estimate) (tasks.Hold, *apierror.Error) {
		res, aerr := engine.AdmitTask(ctx, s, e.Model, e.Images, e.VideoSeconds*1000)
		if aerr != nil {
			return nil, aerr
		}
		return budgetHold{res: res, app: a}, nil
	}
}

// Charge implements holds.Hold: rec replaces the reservation, priced by
// the current config's prices like a charge without one, and a fresh
// charge counts in the model's metrics.
func (h budgetHold) Charge(ctx context.Context, rec billing.Record) error {
	var engine *billing.Engine
	if rt := h.app.runtimeState(); rt != nil {
		engine = rt.billing
	}
	rec, fresh, err := h.res.ChargeWith(ctx, engine, rec)
	if err == nil && fresh {
		h.app.countCharge(rec)
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

// countCharge counts rec, freshly charged, in its model's metrics.
func (a *App) countCharge(rec billing.Record) {
	route := a.metricsRoute(rec.Model)
	route.Charge(rec.Currency, int64(rec.Cost), rec.User, rec.KeyID)
	route.Unpriced(rec.Unpriced)
}

// Interface guards.
var _ holds.Hold = budgetHold{}
