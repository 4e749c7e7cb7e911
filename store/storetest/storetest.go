// Package storetest is the contract suite of package store: table-driven
// tests of every guarantee the repository interfaces document. Each
// backend runs it against real storage:
//
//	func TestContract(t *testing.T) {
//		storetest.Run(t, storetest.Backend{Open: ..., Reopen: ...})
//	}
//
// The tests use only the interfaces, so a failure names a broken
// guarantee, not an implementation detail.
package storetest

import (
	"testing"

	"github.com/caddy-air/caddy-air/store"
)

// Backend opens the backend under test.
type Backend struct {
	// Open returns the repositories of new, empty storage. The suite
	// closes them.
	Open func(t *testing.T) store.Repos
	// Reopen closes r and opens the same storage again, as a restart of
	// the instance does.
	Reopen func(t *testing.T, r store.Repos) store.Repos
	// DropIndexes, if set, removes from r's storage what the backend
	// derives from its data at open when it lacks it (the indexes a
	// version before them did not write), so that the next Reopen is an
	// upgrade from such a version.
	DropIndexes func(t *testing.T, r store.Repos)
}

// Run runs the whole contract suite against b.
func Run(t *testing.T, b Backend) {
	t.Run("Keys", func(t *testing.T) { RunKeys(t, b) })
	t.Run("Ledger", func(t *testing.T) { RunLedger(t, b) })
	t.Run("LedgerSaturates", func(t *testing.T) { runLedgerSaturates(t, b) })
	t.Run("Intents", func(t *testing.T) { RunIntents(t, b) })
	t.Run("Budgets", func(t *testing.T) { RunBudgets(t, b) })
	t.Run("BudgetsSaturated", func(t *testing.T) { runBudgetsSaturated(t, b) })
	t.Run("Teams", func(t *testing.T) { RunTeams(t, b) })
	t.Run("TeamSpend", func(t *testing.T) { runTeamSpend(t, b) })
	t.Run("KeyTags", func(t *testing.T) { runKeyTags(t, b) })
	t.Run("IntentTeam", func(t *testing.T) { runIntentTeam(t, b) })
	t.Run("RateLimits", func(t *testing.T) { RunRateLimits(t, b) })
	t.Run("Tasks", func(t *testing.T) { RunTasks(t, b) })
	t.Run("Docs", func(t *testing.T) { RunDocs(t, b) })
	t.Run("Media", func(t *testing.T) { RunMedia(t, b) })
	t.Run("Responses", func(t *testing.T) { RunResponses(t, b) })
	t.Run("Audit", func(t *testing.T) { RunAudit(t, b) })
	t.Run("Alerts", func(t *testing.T) { RunAlerts(t, b) })
	t.Run("RequestLogs", func(t *testing.T) { RunRequestLogs(t, b) })
}

// open opens new storage that is closed at the end of the test.
func (b Backend) open(t *testing.T) *holder {
	t.Helper()
	h := &holder{r: b.Open(t)}
	t.Cleanup(func() {
		if err := h.r.Close(); err != nil {
			t.Errorf("closing the repositories: %v", err)
		}
	})
	return h
}

// reopen restarts the storage of h.
func (b Backend) reopen(t *testing.T, h *holder) {
	t.Helper()
	h.r = b.Reopen(t, h.r)
}

// holder holds the open repositories of a test, which reopen replaces.
type holder struct{ r store.Repos }

// must fails the test on err.
func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
