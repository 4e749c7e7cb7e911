package gateway

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/caddy-air/caddy-air/billing"
	"github.com/caddy-air/caddy-air/keys"
	"github.com/caddy-air/caddy-air/teams"
)

// ErrBadLimits marks a refusal of CheckLimits: the request's fault (400).
var ErrBadLimits = errors.New("limits refused")

// CheckLimits refuses limits that would look set and limit nothing: for
// a key, a user or a team the gateway does not know (a user is known by its
// keys), in a currency the price file does not know (codes are
// case-sensitive: "usd" is not "USD"), or spend limits in a currency
// that cannot count the cost of every priced model (no exchange rate).
// Its errors wrap ErrBadLimits; others are the storage's.
func (st *Shared) CheckLimits(ctx context.Context, pt *billing.PriceTable, scope billing.Scope, id string, lim billing.Limits) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrBadLimits}, args...)...)
	}
	switch scope {
	case billing.ScopeKey:
		all, err := st.Keys.List(ctx, "")
		if err != nil {
			return err
		}
		if !slices.ContainsFunc(all, func(k *keys.Key) bool { return k.ID == id }) {
			return bad("no key has the id %q", id)
		}
	case billing.ScopeUser:
		own, err := st.Keys.List(ctx, id)
		if err != nil {
			return err
		}
		if len(own) == 0 {
			return bad("no user %q: a user exists once a key is created for it", id)
		}
	case billing.ScopeTeam:
		if _, err := st.Teams.Get(ctx, id); errors.Is(err, teams.ErrNotFound) {
			return bad("no team %q: create it with caddy air team create", id)
		} else if err != nil {
			return err
		}
	}
	if lim.Currency != "" && !slices.Contains(pt.Currencies(), lim.Currency) {
		return bad("currency: %q is not a currency of the price file (it knows %v)", lim.Currency, pt.Currencies())
	}
	if lim.Monthly == 0 && lim.Total == 0 {
		return nil
	}
	if pt == nil {
		return bad("spend limits need a price file (the prices option), which this gateway has not")
	}
	if err := pt.CheckLimitCurrency(lim.Currency); err != nil {
		return bad("%v", err)
	}
	return nil
}
