package billing

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/caddy-air/caddy-air/store"
)

// Limits are the spend and rate limits of a user or an API key. A zero
// field sets no limit. In JSON, spend limits are decimal strings in
// currency units, e.g. {"monthly":"25","rpm":60}.
type Limits struct {
	// Currency is the currency of Monthly and Total; "" means the price
	// file's top-level currency. Costs in other currencies count converted
	// by the price file's rates (rates.go).
	Currency string `json:"currency,omitempty"`
	// Monthly caps the spend per calendar month (UTC).
	Monthly Amount `json:"monthly,omitempty"`
	// Total caps the spend over all time.
	Total Amount `json:"total,omitempty"`
	// RPM caps the requests per minute.
	RPM int64 `json:"rpm,omitempty"`
	// TPM caps the tokens (prompt and output) per minute.
	TPM int64 `json:"tpm,omitempty"`
	// MaxParallel caps the requests (chat, messages, responses, embeddings)
	// in flight at once, per instance: from admission until the exchange
	// ends (its answer is complete, the client left, or it failed). Tasks
	// do not count.
	MaxParallel int64 `json:"max_parallel_requests,omitempty"`
}

// validate checks that no limit is negative.
func (l *Limits) validate() error {
	switch {
	case l.Monthly < 0:
		return errors.New("monthly: must not be negative")
	case l.Total < 0:
		return errors.New("total: must not be negative")
	case l.RPM < 0:
		return errors.New("rpm: must not be negative")
	case l.TPM < 0:
		return errors.New("tpm: must not be negative")
	case l.MaxParallel < 0:
		return errors.New("max_parallel_requests: must not be negative")
	case l.RPM > maxRate || l.TPM > maxRate || l.MaxParallel > maxRate:
		return errors.New("rpm, tpm, max_parallel_requests: must not exceed 1e12")
	}
	return nil
}

// ParseScope parses "user", "key" or "team".
func ParseScope(s string) (Scope, error) {
	if sc := Scope(s); sc.valid() {
		return sc, nil
	}
	return "", fmt.Errorf("unknown scope %q: use \"user\", \"key\" or \"team\"", s)
}

// Limits returns the limits set for id in scope, and whether any are set.
func (b *Budgets) Limits(scope Scope, id string) (Limits, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	acc := b.accounts[subjectKey{scope, id}]
	if acc == nil || !acc.hasLimits {
		return Limits{}, false
	}
	return acc.limits, true
}

// SetLimits stores the limits of id in scope, replacing any earlier ones.
// Rate limits start afresh; spend already recorded keeps counting.
func (b *Budgets) SetLimits(ctx context.Context, scope Scope, id string, lim Limits) error {
	if !scope.valid() {
		return fmt.Errorf("unknown scope %q", scope)
	}
	if id == "" {
		return errors.New("limits need a user or key id")
	}
	lim.Currency = strings.TrimSpace(lim.Currency)
	if err := lim.validate(); err != nil {
		return err
	}
	b.setMu.Lock()
	defer b.setMu.Unlock()
	if err := b.s.SetLimits(ctx, store.Subject{Scope: store.Scope(scope), ID: id}, lim.toStore()); err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	acc := b.account(subjectKey{scope, id})
	acc.limits, acc.hasLimits = lim, true
	acc.rpm, acc.tpm = bucket{}, bucket{}
	return nil
}

// DeleteLimits removes the limits of id in scope. Deleting absent limits
// is not an error.
func (b *Budgets) DeleteLimits(ctx context.Context, scope Scope, id string) error {
	if !scope.valid() {
		return fmt.Errorf("unknown scope %q", scope)
	}
	b.setMu.Lock()
	defer b.setMu.Unlock()
	if err := b.s.DeleteLimits(ctx, store.Subject{Scope: store.Scope(scope), ID: id}); err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if acc := b.accounts[subjectKey{scope, id}]; acc != nil {
		acc.limits, acc.hasLimits = Limits{}, false
		acc.rpm, acc.tpm = bucket{}, bucket{}
	}
	return nil
}

// BudgetStatus is the state of a user's or key's budget.
type BudgetStatus struct {
	// Limits are the limits set, if any.
	Limits *Limits `json:"limits,omitempty"`
	// Month is the current month, as 2006-01.
	Month string `json:"month"`
	// Spend is the spend per currency, sorted by currency.
	Spend []CurrencySpend `json:"spend"`
}

// CurrencySpend is the spend of a user or key in one currency.
type CurrencySpend struct {
	// Currency names the currency.
	Currency string `json:"currency"`
	// Month is the spend of the current month.
	Month Amount `json:"month"`
	// Total is the spend of all time.
	Total Amount `json:"total"`
	// Reserved is the estimated cost of requests in flight.
	Reserved Amount `json:"reserved"`
}

// toStore returns l's storage shape.
func (l Limits) toStore() store.Limits {
	return store.Limits{Currency: l.Currency, Monthly: int64(l.Monthly), Total: int64(l.Total), RPM: l.RPM, TPM: l.TPM, MaxParallel: l.MaxParallel}
}

// limitsFromStore returns the limits of a storage shape.
func limitsFromStore(s store.Limits) Limits {
	return Limits{Currency: s.Currency, Monthly: Amount(s.Monthly), Total: Amount(s.Total), RPM: s.RPM, TPM: s.TPM, MaxParallel: s.MaxParallel}
}
