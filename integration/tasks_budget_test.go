package integration

import (
	"net/http"
	"testing"
	"time"

	"github.com/caddy-air/caddy-air/billing"
)

// keyUSD returns the USD spend and reservations of an API key.
func keyUSD(t *testing.T, keyID string) billing.CurrencySpend {
	t.Helper()
	var st billing.BudgetStatus
	if status := adminJSON(t, http.MethodGet, "/air/budgets/key/"+keyID, "", &st); status != http.StatusOK {
		t.Fatalf("budget status: %d", status)
	}
	for _, cs := range st.Spend {
		if cs.Currency == "USD" {
			return cs
		}
	}
	return billing.CurrencySpend{Currency: "USD"}
}

// TestTaskBudgetHoldsRunningVideos checks that a running video task holds
// its estimated cost against the spend limit until it ends: a key with
// less left than one video starts one and is refused a second while the
// first runs; the hold becomes the charge when the video succeeds and is
// given back when one fails.
func TestTaskBudgetHoldsRunningVideos(t *testing.T) {
	o := tasksOptions()
	o.MockOptions = "video_duration 4s"
	startGateway(t, o)
	key, keyID := createKey(t, "thrifty-director")
	if status := adminJSON(t, http.MethodPut, "/air/budgets/key/"+keyID, `{"total":"0.3"}`, nil); status != http.StatusOK {
		t.Fatalf("set limit: %d", status)
	}
	video := `{"model":"mock-video","prompt":"waves at dusk","seconds":"4"}`
	status, first, raw := createTask(t, key, video)
	if status != http.StatusAccepted || first.Status != "running" {
		t.Fatalf("first video: %d %s", status, raw)
	}
	half, _ := billing.ParseAmount("0.5")
	if got := keyUSD(t, keyID); got.Reserved != half || got.Total != 0 {
		t.Fatalf("while the first video runs: %+v, want 0.5 reserved", got)
	}
	status, _, raw = call(t, http.MethodPost, "/v1/tasks", key, video)
	if status != http.StatusTooManyRequests || decodeError(t, raw).code() != "insufficient_quota" {
		t.Fatalf("second video while the first runs: %d %s, want 429 insufficient_quota", status, raw)
	}
	if _, v, _ := getTask(t, key, first.ID); v.Status != "running" {
		t.Fatalf("the first video ended (%s) before the second was refused: the test proves nothing", v.Status)
	}
	eventually(t, 30*time.Second, "the first video succeeds", func() bool {
		_, v, _ := getTask(t, key, first.ID)
		return v.Status == "succeeded"
	})
	recs := waitLedger(t, "thrifty-director", 1)
	if !sameDecimal(recs[0].Cost, "0.5") {
		t.Fatalf("ledger %+v", recs[0])
	}
	eventually(t, 10*time.Second, "the hold to become the charge", func() bool {
		got := keyUSD(t, keyID)
		return got.Reserved == 0 && got.Total == half
	})

	// A failed video gives its hold back and costs nothing.
	if status := adminJSON(t, http.MethodPut, "/air/budgets/key/"+keyID, `{"total":"1.5"}`, nil); status != http.StatusOK {
		t.Fatalf("raise limit: %d", status)
	}
	status, failing, raw := createTask(t, key, `{"model":"mock-video","prompt":"please fail this one"}`)
	if status != http.StatusAccepted {
		t.Fatalf("failing video: %d %s", status, raw)
	}
	if got := keyUSD(t, keyID); got.Reserved == 0 {
		t.Fatalf("the failing video holds nothing while it runs: %+v", got)
	}
	eventually(t, 30*time.Second, "the video fails", func() bool {
		_, v, _ := getTask(t, key, failing.ID)
		return v.Status == "failed"
	})
	eventually(t, 10*time.Second, "the hold to be given back", func() bool {
		got := keyUSD(t, keyID)
		return got.Reserved == 0 && got.Total == half
	})
	if n := len(ledgerOf(t, "thrifty-director")); n != 1 {
		t.Fatalf("%d ledger records, want the one video that succeeded", n)
	}
}
