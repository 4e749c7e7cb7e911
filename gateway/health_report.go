package gateway

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/caddy-air/caddy-air/billing"
	"github.com/caddy-air/caddy-air/health"
	"github.com/caddy-air/caddy-air/store"
)

// HealthReport is the answer of GET /air/health and of air_health: whether
// the gateway serves, each check, and the state behind them.
type HealthReport struct {
	// Status is "ok" when every check passes, else "failing".
	Status string `json:"status"`
	// Failing lists the failing checks as "<check>: <reason>".
	Failing []string `json:"failing,omitempty"`
	// Checks are every check, passing or not.
	Checks []health.Check `json:"checks"`
	// Storage is the storage's state.
	Storage StorageHealth `json:"storage"`
	// Ledger is the ledger writer's state.
	Ledger LedgerHealth `json:"ledger"`
	// Providers are the recent upstream attempts of each provider.
	Providers []ProviderHealth `json:"providers"`
}

// StorageHealth is the storage's state.
type StorageHealth struct {
	// Dir is the storage directory (admin API only).
	Dir string `json:"dir,omitempty"`
	// Writable is whether the last write probe succeeded.
	Writable  bool  `json:"writable"`
	FreeBytes int64 `json:"free_bytes"`
	// MarginBytes is the free space kept for writes under way: the
	// configured minimum plus the store's reserve plus what sparse files
	// may still claim.
	MarginBytes int64 `json:"margin_bytes"`
}

// LedgerHealth is the ledger writer's state.
type LedgerHealth struct {
	Queued int `json:"queued"`
	// OldestQueuedMillis is how long the oldest queued record has waited.
	OldestQueuedMillis float64 `json:"oldest_queued_ms"`
	Batches            int64   `json:"batches"`
	Records            int64   `json:"records"`
	// LastSyncMillis is how long the last journal sync took.
	LastSyncMillis float64 `json:"last_sync_ms"`
	Broken         string  `json:"broken,omitempty"`
	// UnreadableRegions is the number of damaged regions of the ledger's
	// journal that reads skip (bit rot, a disk error): their records are
	// missing from listings; usage and spend still count them. It does not
	// fail a check: the gateway serves and bills as before.
	UnreadableRegions int `json:"unreadable_regions"`
	// Damaged are those regions (admin API only: they name files).
	Damaged []store.Damage `json:"damaged,omitempty"`
}

// ProviderHealth is one provider's recent attempts.
type ProviderHealth struct {
	Name     string `json:"name"`
	Attempts int64  `json:"attempts"`
	Failures int64  `json:"failures"`
	// FailingClients counts the distinct users whose attempts failed,
	// up to health.MaxClients.
	FailingClients int64   `json:"failing_clients"`
	SuccessRate    float64 `json:"success_rate"`
	// WindowSeconds is how far back the attempts are counted.
	WindowSeconds float64 `json:"window_seconds"`
}

// Texts that stand, in the public report, for error texts that may name
// files or hosts.
const (
	publicStoreErr  = "the store refused a test write (details on the admin API's /air/health)"
	publicLedgerErr = "the ledger refuses records (details on the admin API's /air/health)"
	publicSpaceErr  = "the free space cannot be measured (details on the admin API's /air/health)"
)

// ReportHealth runs the health checks of cfg on st, the providers'
// attempts counted over window, and returns the report and its HTTP
// status. A public report (air_health) leaves out the storage directory
// and the error texts of the store, the ledger and the storage guard,
// which may name files.
func ReportHealth(ctx context.Context, st *Shared, cfg *Config, window time.Duration, th health.Thresholds, public bool) (HealthReport, int) {
	ls := st.Ledger.Stats()
	st.Guard.Refresh()
	in := health.Input{
		StoreErr:     cfg.Probe.Check(ctx, st.Repos.Probe),
		FreeBytes:    st.Guard.Free(),
		MarginBytes:  st.Guard.Margin(),
		Queued:       ls.Queued,
		OldestQueued: ls.OldestQueued,
		LedgerBroken: ls.Broken,
		Window:       window,
		Providers:    cfg.Tracker.All(),
	}
	// The guard refuses work for the ledger's backlog too; any other
	// refusal with room to spare is a failure to measure.
	if why := st.Guard.Full(); why != "" && why != ls.Broken && in.FreeBytes >= in.MarginBytes {
		in.MeasureErr = why
	}
	rep := HealthReport{
		Storage: StorageHealth{Dir: st.Guard.Dir(), Writable: in.StoreErr == nil, FreeBytes: in.FreeBytes, MarginBytes: in.MarginBytes},
		Ledger:  ledgerFrom(ls),
	}
	if public {
		rep.Storage.Dir = ""
		rep.Ledger.Damaged = nil
		if in.StoreErr != nil {
			in.StoreErr = errors.New(publicStoreErr)
		}
		if in.LedgerBroken != "" {
			in.LedgerBroken, rep.Ledger.Broken = publicLedgerErr, publicLedgerErr
		}
		if in.MeasureErr != "" {
			in.MeasureErr = publicSpaceErr
		}
	}
	checks, ok := health.Evaluate(in, th)
	rep.Checks = checks
	for _, c := range checks {
		if !c.OK {
			rep.Failing = append(rep.Failing, c.Name+": "+c.Reason)
		}
	}
	rep.Providers = make([]ProviderHealth, 0, len(in.Providers))
	for _, p := range in.Providers {
		rep.Providers = append(rep.Providers, ProviderHealth{Name: p.Name, Attempts: p.Attempts, Failures: p.Failures,
			FailingClients: p.FailingClients, SuccessRate: p.SuccessRate(), WindowSeconds: in.Window.Seconds()})
	}
	if !ok {
		rep.Status = "failing"
		return rep, http.StatusServiceUnavailable
	}
	rep.Status = "ok"
	return rep, http.StatusOK
}

// ReportLive is the liveness report of st (nil while the app starts or
// stops, which is alive): 503 only when the ledger stopped taking records,
// which a restart mends. Its reason is the public one: it may name files.
func ReportLive(st *Shared) (HealthReport, int) {
	var in health.Input
	if st != nil {
		if ls := st.Ledger.Stats(); ls.Broken != "" {
			in.LedgerBroken = publicLedgerErr
		}
	}
	checks, ok := health.EvaluateLive(in)
	rep := HealthReport{Status: "ok", Checks: checks, Providers: []ProviderHealth{}}
	if !ok {
		rep.Status = "failing"
		rep.Failing = []string{checks[0].Name + ": " + checks[0].Reason}
		return rep, http.StatusServiceUnavailable
	}
	return rep, http.StatusOK
}

// NotServing is the report of an app that has not started, or has
// stopped.
var NotServing = HealthReport{Status: "failing", Failing: []string{"gateway: starting or stopping"}}

// ledgerFrom converts the ledger's stats.
func ledgerFrom(s billing.LedgerStats) LedgerHealth {
	return LedgerHealth{
		Queued: s.Queued, OldestQueuedMillis: float64(s.OldestQueued) / float64(time.Millisecond),
		Batches: s.Batches, Records: s.Records,
		LastSyncMillis: float64(s.LastSync) / float64(time.Millisecond), Broken: s.Broken,
		UnreadableRegions: len(s.Damaged), Damaged: s.Damaged,
	}
}
