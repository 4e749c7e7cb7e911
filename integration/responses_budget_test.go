package integration

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/openai/openai-go/v3/responses"

	"github.com/caddy-air/caddy-air/billing"
)

// bgBody is a background create that reserves about $2 of mock-gpt
// (max_output_tokens of a million at $2.00 per million) and that the
// mock keeps queued for delay.
func bgBody(input string, delay time.Duration) string {
	return fmt.Sprintf(`{"model":"mock-gpt","input":%q,"background":true,"max_output_tokens":1000000,"mock_background_ms":%d}`,
		input, delay.Milliseconds())
}

// createHeld creates a background response through the gateway and
// returns its id.
func createHeld(t *testing.T, key, body string) string {
	t.Helper()
	status, _, raw := call(t, http.MethodPost, "/v1/responses", key, body)
	if status != http.StatusOK {
		t.Fatalf("background create: %d %s", status, raw)
	}
	var r responses.Response
	if err := r.UnmarshalJSON(raw); err != nil || r.Status != "queued" {
		t.Fatalf("background create: %v %s", err, raw)
	}
	return r.ID
}

// TestResponsesBudgetHoldsBackground checks that a running background
// response holds its create's reservation against the spend limit until
// it is billed: a key with $1 left (less than one response's $2
// reservation; admission refuses a key whose spend and reservations
// reach its limit) starts one and is refused a second while the first
// runs; the hold becomes the record once the poller bills it, and a
// cancelled response gives its hold back.
func TestResponsesBudgetHoldsBackground(t *testing.T) {
	startGateway(t, gatewayOptions{Prices: respPrices, Extra: pollFast})
	key, keyID := createKey(t, "bg-thrifty")
	if status := adminJSON(t, http.MethodPut, "/air/budgets/key/"+keyID, `{"total":"1"}`, nil); status != http.StatusOK {
		t.Fatalf("set limit: %d", status)
	}
	two, _ := billing.ParseAmount("2")
	first := createHeld(t, key, bgBody("the long one", 3*time.Second))
	if got := keyUSD(t, keyID); got.Reserved < two || got.Total != 0 {
		t.Fatalf("while the first background response runs: %+v, want about $2 reserved", got)
	}
	status, _, raw := call(t, http.MethodPost, "/v1/responses", key, bgBody("one too many", 0))
	if status != http.StatusTooManyRequests || decodeError(t, raw).code() != "insufficient_quota" {
		t.Fatalf("second background response while the first runs: %d %s, want 429 insufficient_quota", status, raw)
	}
	if recs := ledgerOf(t, "bg-thrifty"); len(recs) != 0 {
		t.Fatalf("the first response was billed (%+v) before the second was refused: the test proves nothing", recs)
	}
	recs := waitLedger(t, "bg-thrifty", 1)
	if recs[0].Outcome != "ok" || !sameDecimal(recs[0].Cost, expect("mock-gpt", upstreamUsage(t, mockClient(), first)).cost.String()) {
		t.Fatalf("record of the first response: %+v", recs[0])
	}
	spent := sumCost(t, recs)
	eventually(t, 10*time.Second, "the hold to become the record", func() bool {
		got := keyUSD(t, keyID)
		return got.Reserved == 0 && got.Total == spent
	})

	// A cancelled response gives its hold back and costs what it used.
	id := createHeld(t, key, bgBody("cancel me", time.Minute))
	if got := keyUSD(t, keyID); got.Reserved == 0 {
		t.Fatalf("the response to cancel holds nothing while it runs: %+v", got)
	}
	c := respClient(key)
	if r, err := c.Responses.Cancel(context.Background(), id); err != nil || r.Status != "cancelled" {
		t.Fatalf("cancel: %v %+v", err, r)
	}
	recs = waitLedger(t, "bg-thrifty", 2)
	if recs[0].Outcome != "canceled" && recs[1].Outcome != "canceled" {
		t.Fatalf("no record of the cancelled response: %+v", recs)
	}
	spent = sumCost(t, recs)
	eventually(t, 10*time.Second, "the cancelled response's hold to be given back", func() bool {
		got := keyUSD(t, keyID)
		return got.Reserved == 0 && got.Total == spent
	})
	// The room is back: a next background response is admitted.
	createHeld(t, key, bgBody("room again", 0))
}

// sumCost is the sum of the costs of recs.
func sumCost(t *testing.T, recs []ledgerRecord) billing.Amount {
	t.Helper()
	var sum billing.Amount
	for _, r := range recs {
		a, err := billing.ParseAmount(r.Cost)
		if err != nil {
			t.Fatal(err)
		}
		sum += a
	}
	return sum
}
