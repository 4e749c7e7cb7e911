package caddymodule

import (
	"fmt"
	"time"

	"github.com/caddy-air/caddy-air/billing"
	"github.com/caddy-air/caddy-air/caddymodule/airmod"
)

// Values of App.LedgerDurability.
const (
	durabilityJournaled = "journaled"
	durabilityStrict    = "strict"
)

// durability returns the billing.Durability that a.LedgerDurability names.
func (a *App) durability() (billing.Durability, error) {
	switch a.LedgerDurability {
	case "", durabilityJournaled:
		return billing.DurabilityJournaled, nil
	case durabilityStrict:
		return billing.DurabilityStrict, nil
	}
	return 0, fmt.Errorf("ledger_durability: %q is neither %s nor %s", a.LedgerDurability, durabilityJournaled, durabilityStrict)
}

// gatherSetter is the intent log of the postgres backend, whose gather
// delay follows the durability (postgres.Intents.SetGather).
type gatherSetter interface{ SetGather(time.Duration) }

// applyDurability sets the ledger's durability and commit interval on the
// state st, shared across reloads, from this config, and on PostgreSQL the
// intents' gather delay, which the backend picks (airmod.IntentGatherer).
// Validate has checked the durability.
func (a *App) applyDurability(st *state) {
	d, _ := a.durability()
	st.ledger.SetDurability(d)
	commitInterval := billing.DefaultCommitInterval
	if a.LedgerCommitInterval != nil {
		commitInterval = time.Duration(*a.LedgerCommitInterval)
	}
	st.ledger.SetCommitInterval(commitInterval)
	g, ok := st.repos.Intents.(gatherSetter)
	if !ok {
		return
	}
	if ig, ok := a.storage.(airmod.IntentGatherer); ok {
		g.SetGather(ig.Gather(d == billing.DurabilityStrict))
	}
}
