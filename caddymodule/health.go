package caddymodule

import (
	"fmt"
	"net/http"
	"time"

	"github.com/caddy-air/caddy-air/billing"
)

// health is the answer of GET /air/health: whether the gateway can take
// billable work, and the storage and ledger state behind it.
type health struct {
	// Status is "ok" when every check passes, else "failing".
	Status string `json:"status"`
	// Failing lists the reasons of the failing checks.
	Failing []string `json:"failing,omitempty"`
	// Storage is the storage guard's last measure.
	Storage storageHealth `json:"storage"`
	// Ledger is the ledger writer's state.
	Ledger ledgerHealth `json:"ledger"`
}

// storageHealth is the storage guard's last measure.
type storageHealth struct {
	Dir       string `json:"dir"`
	FreeBytes int64  `json:"free_bytes"`
	// MarginBytes is the free space kept for writes under way: the
	// configured minimum plus what the store's sparse files may claim.
	MarginBytes int64 `json:"margin_bytes"`
}

// ledgerHealth is the ledger writer's state.
type ledgerHealth struct {
	Queued  int   `json:"queued"`
	Batches int64 `json:"batches"`
	Records int64 `json:"records"`
	// LastSyncMillis is how long the last journal sync took.
	LastSyncMillis float64 `json:"last_sync_ms"`
	Broken         string  `json:"broken,omitempty"`
}

// handleHealth answers GET /air/health: 200 while billable work is
// accepted, 503 with the failing checks otherwise.
func (Admin) handleHealth(w http.ResponseWriter, r *http.Request) error {
	if r.Method != http.MethodGet {
		return apiErr(http.StatusMethodNotAllowed, fmt.Errorf("method %s not allowed", r.Method))
	}
	st, err := startedState()
	if err != nil {
		return err
	}
	ls := st.ledger.Stats()
	h := health{
		Status: "ok",
		Storage: storageHealth{
			Dir:         st.guard.dir,
			FreeBytes:   st.guard.free.Load(),
			MarginBytes: st.guard.margin.Load(),
		},
		Ledger: ledgerFrom(ls),
	}
	if why := st.guard.full.Load(); why != nil {
		h.Failing = append(h.Failing, "storage: "+*why)
	}
	if ls.Broken != "" && st.guard.full.Load() == nil {
		h.Failing = append(h.Failing, "ledger: "+ls.Broken)
	}
	status := http.StatusOK
	if len(h.Failing) > 0 {
		h.Status, status = "failing", http.StatusServiceUnavailable
	}
	return writeAdminJSON(w, status, h)
}

// ledgerFrom converts the ledger's stats.
func ledgerFrom(s billing.LedgerStats) ledgerHealth {
	return ledgerHealth{
		Queued: s.Queued, Batches: s.Batches, Records: s.Records,
		LastSyncMillis: float64(s.LastSync) / float64(time.Millisecond), Broken: s.Broken,
	}
}
