package integration

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caddy-air/caddy-air/alerts"
)

// alertReceiver is a webhook receiver: it resets the connection of its
// first delivery mid-way (after reading the body, before answering), and
// records the later ones whose signature is valid under secret.
type alertReceiver struct {
	*httptest.Server
	secret string
	calls  atomic.Int32
	mu     sync.Mutex
	events []alerts.Event
	bad    []string
}

func newAlertReceiver(t *testing.T, secret string) *alertReceiver {
	t.Helper()
	rc := &alertReceiver{secret: secret}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if rc.calls.Add(1) == 1 {
			conn, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				_ = conn.(*net.TCPConn).SetLinger(0)
				conn.Close()
			}
			return
		}
		rc.mu.Lock()
		defer rc.mu.Unlock()
		if err := alerts.Verify(secret, r.Header.Get(alerts.SignatureHeader), body, time.Now(), time.Minute); err != nil {
			rc.bad = append(rc.bad, err.Error())
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		var e alerts.Event
		if err := json.Unmarshal(body, &e); err != nil || e.ID != r.Header.Get(alerts.IDHeader) {
			rc.bad = append(rc.bad, fmt.Sprintf("body %s: %v", body, err))
		}
		rc.events = append(rc.events, e)
	}))
	t.Cleanup(rc.Close)
	return rc
}

// count returns how many events were received of kind, by key.
func (rc *alertReceiver) count(kind string, key func(alerts.Event) string) map[string]int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	out := map[string]int{}
	for _, e := range rc.events {
		if e.Kind == kind {
			out[key(e)]++
		}
	}
	return out
}

// TestAlertsBudgetCrossings spends a key's total limit in steps of 10%
// through the gateway: the webhook receives the 50%, 80% and 100%
// crossings once each, signed, although its first delivery was reset.
func TestAlertsBudgetCrossings(t *testing.T) {
	rc := newAlertReceiver(t, "whsec-budget")
	up := cannedUpstream(t)
	o := recOptions(up)
	o.Prices = chatPrices
	o.Extra = `alerts {
			webhook ops ` + rc.URL + `/hook {
				secret {env.AIR_TEST_ALERT_SECRET}
				events budget
			}
			check_interval 100ms
		}`
	t.Setenv("AIR_TEST_ALERT_SECRET", "whsec-budget")
	startGateway(t, o)
	before := scrapeMetrics(t)
	key, keyID := createKey(t, "alerted")
	// Each request costs 0.00009: a tenth of the limit.
	if status := adminJSON(t, http.MethodPut, "/air/budgets/key/"+keyID, `{"total":"0.0009"}`, nil); status != http.StatusOK {
		t.Fatalf("set total: %d", status)
	}
	chat := `{"model":"rec-model","messages":[{"role":"user","content":"x"}]}`
	byThreshold := func(e alerts.Event) string { return e.Data["scope"] + "/" + e.Data["id"] + "/" + e.Data["threshold"] }
	for i := range 12 {
		if status, _, raw := postChat(t, key, chat); status != http.StatusOK && status != http.StatusTooManyRequests {
			t.Fatalf("request %d: %d %s", i, status, raw)
		}
		time.Sleep(30 * time.Millisecond) // let checks see the spend between requests
	}
	eventually(t, 30*time.Second, "the 100% crossing is delivered", func() bool {
		return rc.count(alerts.KindBudget, byThreshold)["key/"+keyID+"/100"] > 0
	})
	time.Sleep(time.Second) // ten more checks: none may raise a crossing again
	got := rc.count(alerts.KindBudget, byThreshold)
	want := map[string]int{"key/" + keyID + "/50": 1, "key/" + keyID + "/80": 1, "key/" + keyID + "/100": 1}
	if len(got) != len(want) {
		t.Errorf("crossings %v, want %v", got, want)
	}
	for k, n := range want {
		if got[k] != n {
			t.Errorf("%s delivered %d times, want once", k, got[k])
		}
	}
	// The metrics count three alerts raised and three deliveries made
	// (the reset attempt is part of one).
	after := scrapeMetrics(t)
	raised, delivered := `air_alerts_raised_total{kind="budget"}`, `air_alerts_deliveries_total{state="delivered"}`
	if after[raised]-before[raised] != 3 || after[delivered]-before[delivered] != 3 {
		t.Errorf("raised %v, delivered %v; want 3 more of each", after[raised]-before[raised], after[delivered]-before[delivered])
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.calls.Load() != int32(len(rc.events))+1 || len(rc.bad) != 0 {
		t.Errorf("%d calls for %d events (want one more: the reset one), bad: %v", rc.calls.Load(), len(rc.events), rc.bad)
	}
}

// TestAlertsBreakerOpenAndClose fails a provider until its breaker
// opens, then heals it until the breaker closes: one breaker_open and one
// breaker_closed event arrive.
func TestAlertsBreakerOpenAndClose(t *testing.T) {
	rc := newAlertReceiver(t, "whsec-breaker")
	var failing atomic.Bool
	failing.Store(true)
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
		if failing.Load() {
			w.WriteHeader(http.StatusInternalServerError)
			_, _ = io.WriteString(w, `{"error":{"message":"down","type":"server_error"}}`)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, recJSONResponse)
	})
	startGateway(t, gatewayOptions{
		Providers: providerBlock("flaky", "openai", "\t\t\tretries 0\n\t\t\tmin_requests 2\n\t\t\tfailure_rate 0.5\n\t\t\tfail_duration 1s", up),
		Models:    "model rec-model flaky",
		Extra: `alerts {
			webhook ops ` + rc.URL + ` {
				secret whsec-breaker
				events breaker_open breaker_closed
			}
		}`,
	})
	key, _ := createKey(t, "breakers")
	chat := `{"model":"rec-model","messages":[{"role":"user","content":"x"}]}`
	byProvider := func(e alerts.Event) string { return e.Data["provider"] }
	eventually(t, 30*time.Second, "breaker_open is delivered", func() bool {
		postChat(t, key, chat)
		return rc.count(alerts.KindBreakerOpen, byProvider)["flaky"] > 0
	})
	failing.Store(false)
	eventually(t, 30*time.Second, "breaker_closed is delivered", func() bool {
		postChat(t, key, chat)
		time.Sleep(100 * time.Millisecond)
		return rc.count(alerts.KindBreakerClosed, byProvider)["flaky"] > 0
	})
	for i := range 5 {
		if status, _, raw := postChat(t, key, chat); status != http.StatusOK {
			t.Fatalf("request %d after healing: %d %s", i, status, raw)
		}
	}
	time.Sleep(500 * time.Millisecond)
	if o, c := rc.count(alerts.KindBreakerOpen, byProvider), rc.count(alerts.KindBreakerClosed, byProvider); o["flaky"] != 1 || c["flaky"] != 1 {
		t.Errorf("breaker_open %v, breaker_closed %v: want one each", o, c)
	}
}
