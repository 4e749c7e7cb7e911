package health

import (
	"fmt"
	"time"

	"github.com/dustin/go-humanize"
)

// Names of the checks.
const (
	CheckStore     = "store_writable"
	CheckFreeSpace = "storage_space"
	CheckLedger    = "ledger"
	// CheckProvider is followed by ":" and the provider's name.
	CheckProvider = "provider"
)

// Defaults of Thresholds.
const (
	DefaultMaxLedgerLag   = 5 * time.Second
	DefaultMinSuccessRate = 0.5
	DefaultMinAttempts    = 5
	DefaultMinClients     = 3
)

// Thresholds decide when a check fails.
type Thresholds struct {
	// MaxLedgerLag is how long the oldest record may wait for the ledger
	// writer. Zero means DefaultMaxLedgerLag.
	MaxLedgerLag time.Duration
	// MinSuccessRate is the share of a provider's recent attempts that
	// must succeed; below it, its check fails. Negative disables the
	// provider checks; zero means DefaultMinSuccessRate.
	MinSuccessRate float64
	// MinAttempts is how many attempts a provider must have made within
	// the window before its rate is judged. Zero means DefaultMinAttempts.
	MinAttempts int64
	// MinClients is how many distinct clients' attempts must have failed
	// within the window before a provider's check may fail (at most
	// MaxClients): a client that sends only requests the provider refuses
	// or fails on cannot take the gateway out of its load balancer. Zero
	// means DefaultMinClients.
	MinClients int64
}

// withDefaults fills zero fields.
func (t Thresholds) withDefaults() Thresholds {
	if t.MaxLedgerLag <= 0 {
		t.MaxLedgerLag = DefaultMaxLedgerLag
	}
	if t.MinSuccessRate == 0 {
		t.MinSuccessRate = DefaultMinSuccessRate
	}
	if t.MinAttempts <= 0 {
		t.MinAttempts = DefaultMinAttempts
	}
	if t.MinClients <= 0 {
		t.MinClients = DefaultMinClients
	}
	t.MinClients = min(t.MinClients, MaxClients)
	return t
}

// Input is the state the checks judge.
type Input struct {
	// StoreErr is the error of the last write probe of the store, nil if
	// it succeeded.
	StoreErr error
	// FreeBytes and MarginBytes are the storage's free space and the margin
	// kept for writes under way; MeasureErr is why free space could not be
	// measured, if it could not.
	FreeBytes, MarginBytes int64
	MeasureErr             string
	// Queued is the number of ledger records waiting for the writer, and
	// OldestQueued how long the oldest of them has waited.
	Queued       int
	OldestQueued time.Duration
	// LedgerBroken is why the ledger refuses records, if it does.
	LedgerBroken string
	// Window is the span of the provider stats.
	Window time.Duration
	// Providers are the recent attempts of each provider.
	Providers []Provider
}

// Check is the result of one check.
type Check struct {
	// Name is the check's name: store_writable, storage_space, ledger or
	// provider:<name>.
	Name string `json:"name"`
	// OK is true when the check passes.
	OK bool `json:"ok"`
	// Reason says why a check fails.
	Reason string `json:"reason,omitempty"`
}

// Evaluate runs every readiness check on in: the store takes writes,
// free space is above the margin, the ledger keeps up, and each provider
// that made enough attempts recently, failing for enough clients, has
// enough successes. It returns every check, in that order, and whether
// all pass.
func Evaluate(in Input, th Thresholds) ([]Check, bool) {
	th = th.withDefaults()
	checks := make([]Check, 0, 3+len(in.Providers))
	add := func(name, reason string) {
		checks = append(checks, Check{Name: name, OK: reason == "", Reason: reason})
	}

	var reason string
	if in.StoreErr != nil {
		reason = "a test write failed: " + in.StoreErr.Error()
	}
	add(CheckStore, reason)

	reason = ""
	switch {
	case in.MeasureErr != "":
		reason = in.MeasureErr
	case in.FreeBytes < in.MarginBytes:
		reason = fmt.Sprintf("%s free, below the margin of %s kept for writes under way",
			humanize.IBytes(uint64(max(in.FreeBytes, 0))), humanize.IBytes(uint64(in.MarginBytes)))
	}
	add(CheckFreeSpace, reason)

	reason = ""
	switch {
	case in.LedgerBroken != "":
		reason = in.LedgerBroken
	case in.Queued > 0 && in.OldestQueued > th.MaxLedgerLag:
		reason = fmt.Sprintf("%d records wait for the ledger writer, the oldest for %s (limit %s)",
			in.Queued, in.OldestQueued.Round(time.Millisecond), th.MaxLedgerLag)
	}
	add(CheckLedger, reason)

	if th.MinSuccessRate > 0 {
		for _, p := range in.Providers {
			reason = ""
			if p.Attempts >= th.MinAttempts && p.SuccessRate() < th.MinSuccessRate && p.FailingClients >= th.MinClients {
				reason = fmt.Sprintf("%d of its last %d attempts failed within %s, for %d or more clients (success rate %.0f%%, minimum %.0f%%)",
					p.Failures, p.Attempts, in.Window, p.FailingClients, 100*p.SuccessRate(), 100*th.MinSuccessRate)
			}
			add(CheckProvider+":"+p.Name, reason)
		}
	}

	ok := true
	for _, c := range checks {
		ok = ok && c.OK
	}
	return checks, ok
}

// CheckLive is the liveness check's name.
const CheckLive = "live"

// EvaluateLive runs the liveness check on in: it fails only for what a
// restart of the process mends, a ledger that stopped taking records
// (after a failed sync, nothing written since can be trusted until the
// journal is reopened). A full disk, a slow ledger or a failing provider
// fail readiness (Evaluate), not liveness: restarting would not help.
func EvaluateLive(in Input) ([]Check, bool) {
	c := Check{Name: CheckLive, OK: in.LedgerBroken == "", Reason: in.LedgerBroken}
	return []Check{c}, c.OK
}
