package caddymodule

import (
	"context"

	"github.com/caddy-air/caddy-air/apierror"
	"github.com/caddy-air/caddy-air/billing"
	"github.com/caddy-air/caddy-air/tasks"
)

// heldReservation is a reservation on a caller's budgets held while what
// it was made for runs: a task (taskHold) or a background response
// (responseHold).
type heldReservation struct {
	res *billing.Reservation
	app *App
}

// charge records rec in place of the reservation, priced by the current
// config's prices like a charge without one, and counts a fresh charge in
// the model's metrics.
func (h heldReservation) charge(ctx context.Context, rec billing.Record) error {
	var engine *billing.Engine
	if rt := h.app.runtimeState(); rt != nil {
		engine = rt.billing
	}
	rec, fresh, err := h.res.ChargeWith(ctx, engine, rec)
	if err == nil && fresh {
		route := h.app.metricsRoute(rec.Model)
		route.Charge(rec.Currency, int64(rec.Cost), rec.User, rec.KeyID)
		route.Unpriced(rec.Unpriced)
	}
	return err
}

// taskHold is a task's reservation on its owner's budgets, held while the
// task runs (tasks.Hold).
type taskHold struct{ heldReservation }

// admitTask returns the tasks.Admit of a create by s: it reserves the
// images or video seconds the create asks for against s's spend limits,
// and counts the create as a request against its rate limits.
func (a *App) admitTask(ctx context.Context, engine *billing.Engine, s billing.Subject) tasks.Admit {
	return func(e tasks.Estimate) (tasks.Hold, *apierror.Error) {
		res, aerr := engine.AdmitTask(ctx, s, e.Model, e.Images, e.VideoSeconds*1000)
		if aerr != nil {
			return nil, aerr
		}
		return taskHold{heldReservation{res: res, app: a}}, nil
	}
}

// Charge implements tasks.Hold: the charge replaces the reservation,
// priced by the current config's prices, like a charge without one.
func (h taskHold) Charge(ctx context.Context, c tasks.Charge) error {
	return h.charge(ctx, taskRecord(c))
}

// Release implements tasks.Hold: a task that ended without a charge gives
// its reserved cost back and still counts as a request.
func (h taskHold) Release() { h.res.ReleaseCost() }

// Cancel implements tasks.Hold: a create refused before its task existed
// counts for nothing.
func (h taskHold) Cancel() { h.res.Release() }

// Interface guards.
var _ tasks.Hold = taskHold{}
