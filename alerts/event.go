// Package alerts raises the events an operator wants to hear about
// (budget crossings, provider breakers, the ledger's availability, keys
// about to expire) and delivers each of them once to the configured
// webhooks, signed, retried with backoff, through an outbox shared by the
// gateway's instances.
//
// Raising an event never blocks: Dispatcher.Raise puts it on a bounded
// queue and drops it (counting the drop) when the queue is full.
package alerts

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"github.com/caddy-air/caddy-air/store"
)

// Kinds of events.
const (
	// KindBudget is a budget crossing 50%, 80% or 100% of a limit.
	KindBudget = "budget"
	// KindBreakerOpen is a provider's breaker opening.
	KindBreakerOpen = "breaker_open"
	// KindBreakerClosed is a provider's breaker closing again.
	KindBreakerClosed = "breaker_closed"
	// KindLedgerDown is the ledger becoming unavailable.
	KindLedgerDown = "ledger_unavailable"
	// KindLedgerUp is the ledger available again.
	KindLedgerUp = "ledger_available"
	// KindKeyExpiring is a key about to expire.
	KindKeyExpiring = "key_expiring"
)

// Kinds lists every kind, for the validation of event filters.
var Kinds = []string{KindBudget, KindBreakerOpen, KindBreakerClosed, KindLedgerDown, KindLedgerUp, KindKeyExpiring}

// KnownKind reports whether k is one of Kinds.
func KnownKind(k string) bool {
	for _, c := range Kinds {
		if c == k {
			return true
		}
	}
	return false
}

// Event is one alert (its JSON is the body that webhooks receive).
type Event = store.AlertEvent

// DedupeID derives an event id from the parts that identify an
// occurrence: the same parts give the same id on every instance.
func DedupeID(parts ...string) string {
	sum := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	return "evt_" + hex.EncodeToString(sum[:12])
}
