package caddymodule

import (
	"context"

	"github.com/caddy-air/caddy-air/billing"
	"github.com/caddy-air/caddy-air/responses"
)

// responseHold is a background response's reservation on its owner's
// budgets, held while the response runs (responses.Hold).
type responseHold struct{ heldReservation }

// Charge implements responses.Hold: the record replaces the reservation,
// priced by the current config's prices, like a charge without one.
func (h responseHold) Charge(ctx context.Context, rec billing.Record) error {
	return h.charge(ctx, rec)
}

// Release implements responses.Hold: a response billed elsewhere, or
// gone, gives its reserved cost back; its create still counts as a
// request.
func (h responseHold) Release() { h.res.ReleaseCost() }

// Interface guards.
var _ responses.Hold = responseHold{}
