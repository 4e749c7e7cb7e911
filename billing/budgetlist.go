package billing

import (
	"context"
	"errors"
	"sort"

	"github.com/caddy-air/caddy-air/store"
)

// LimitKey sets the all-time spend limit of API key id to limit, a decimal
// amount in the price table's currency such as "5.00", replacing the
// key's other limits. It implements keys.Limiter: a key's spend limit is
// a budget of scope "key", enforced and listed like any other.
func (b *Budgets) LimitKey(ctx context.Context, id, limit string) error {
	amt, err := ParseAmount(limit)
	if err != nil {
		return err
	}
	if amt <= 0 {
		return errors.New("must be more than zero")
	}
	return b.SetLimits(ctx, ScopeKey, id, Limits{Total: amt})
}

// BudgetEntry is a user or key with limits, as List returns it.
type BudgetEntry struct {
	// Scope is "user" or "key".
	Scope Scope `json:"scope"`
	// ID is the user's name or the key's id.
	ID string `json:"id"`
	BudgetStatus
}

// List returns every user, key and team that has limits, with its limits
// and spend: users, then keys, then teams, each sorted by id. The subjects are read from the
// backend, so limits set through another instance are listed too.
func (b *Budgets) List(ctx context.Context) ([]BudgetEntry, error) {
	var subjects []store.Subject
	stored := map[store.Subject]store.Limits{}
	err := b.s.Limits(ctx, func(s store.Subject, l store.Limits) error {
		subjects = append(subjects, s)
		stored[s] = l
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(subjects, func(i, j int) bool {
		if ri, rj := scopeRank(subjects[i].Scope), scopeRank(subjects[j].Scope); ri != rj {
			return ri < rj
		}
		return subjects[i].ID < subjects[j].ID
	})
	out := make([]BudgetEntry, 0, len(subjects))
	for _, s := range subjects {
		e := BudgetEntry{Scope: Scope(s.Scope), ID: s.ID, BudgetStatus: b.Status(Scope(s.Scope), s.ID)}
		if e.Limits == nil {
			lim := limitsFromStore(stored[s])
			e.Limits = &lim
		}
		out = append(out, e)
	}
	return out, nil
}

// scopeRank orders the scopes of List: users, keys, teams.
func scopeRank(s store.Scope) int {
	switch s {
	case store.ScopeUser:
		return 0
	case store.ScopeKey:
		return 1
	}
	return 2
}
