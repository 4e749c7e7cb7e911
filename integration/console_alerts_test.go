package integration

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestConsoleAlertsInBrowser: a key about to expire raises an alert; an
// operator sees it on the console's alerts page with its delivery to each
// webhook (one delivered, one that the receiver refused), and a user who
// is not an operator gets 403.
func TestConsoleAlertsInBrowser(t *testing.T) {
	ok := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer ok.Close()
	gone := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNotFound) }))
	defer gone.Close()
	startGateway(t, gatewayOptions{Site: consoleSite, Extra: fmt.Sprintf(`alerts {
			webhook ops %s
			webhook retired %s {
				format slack
			}
			key_expiry_lead 72h
			check_interval 100ms
		}`, ok.URL, gone.URL)})
	var created struct {
		ID string `json:"id"`
	}
	if status := adminJSON(t, http.MethodPost, "/air/keys", `{"user":"soon","expires_in":"24h"}`, &created); status != http.StatusCreated {
		t.Fatalf("create: %d", status)
	}
	type delivery struct {
		Event struct {
			ID, Kind string
			Data     map[string]string
		}
		Target, State string
		Attempts      int
	}
	var ds []delivery
	eventually(t, 30*time.Second, "the key_expiring alert's deliveries end", func() bool {
		ds = nil
		adminJSON(t, http.MethodGet, "/air/alerts", "", &ds)
		ended := 0
		for _, d := range ds {
			if d.Event.Kind == "key_expiring" && d.Event.Data["key_id"] == created.ID && d.State != "pending" {
				ended++
			}
		}
		return ended == 2
	})
	eventID := ds[0].Event.ID

	b := newBrowser(t)
	admin := b.tab(adminUser, adminPassword)
	var row, okState, goneState string
	b.run(admin,
		chromedp.Navigate(baseURL+"/console/operators/alerts"),
		chromedp.WaitVisible(`#alerts`, chromedp.ByID),
		chromedp.Text(fmt.Sprintf(`tr[data-event=%q]`, eventID), &row, chromedp.ByQuery),
		chromedp.AttributeValue(fmt.Sprintf(`tr[data-event=%q] .delivery[data-target=ops]`, eventID), "data-state", &okState, nil, chromedp.ByQuery),
		chromedp.AttributeValue(fmt.Sprintf(`tr[data-event=%q] .delivery[data-target=retired]`, eventID), "data-state", &goneState, nil, chromedp.ByQuery),
	)
	if !strings.Contains(row, "key_expiring") || !strings.Contains(row, created.ID) || !strings.Contains(row, "webhook answered 404") {
		t.Errorf("the alert's row: %q", row)
	}
	if okState != "delivered" || goneState != "failed" {
		t.Errorf("deliveries: ops %q, retired %q; want delivered and failed", okState, goneState)
	}
	if strings.Contains(row, ok.URL) || strings.Contains(row, gone.URL) {
		t.Errorf("the page shows a webhook's URL: %q", row)
	}
	b.screenshot(admin, "alerts")

	// The operator regenerates a key with a day's grace: the new secret
	// is shown once, and both secrets work.
	old, keyID := createKey(t, "rotating")
	var fresh string
	b.run(admin,
		chromedp.Navigate(baseURL+"/console/operators/keys?q="+keyID),
		chromedp.Click(fmt.Sprintf(`tr[data-key-id=%q] a.regenerate`, keyID), chromedp.ByQuery),
		chromedp.WaitVisible(`#regenerate-key`, chromedp.ByID),
		chromedp.SetValue(`#regenerate-key select[name=grace]`, "24h", chromedp.ByQuery),
		chromedp.Click(`#regenerate-key button[type=submit]`, chromedp.ByQuery),
		chromedp.WaitVisible(`#secret`, chromedp.ByID),
		chromedp.Text(`#secret`, &fresh, chromedp.ByID),
	)
	if !strings.HasPrefix(fresh, "sk-air-") || fresh == old {
		t.Fatalf("regenerated secret %q", fresh)
	}
	chat := `{"model":"mock-gpt","messages":[{"role":"user","content":"x"}]}`
	for name, sec := range map[string]string{"old": old, "new": fresh} {
		if st, _, body := call(t, http.MethodPost, "/v1/chat/completions", sec, chat); st != http.StatusOK {
			t.Errorf("the %s secret within the grace: %d %s", name, st, body)
		}
	}
	var listed []struct {
		ID                  string     `json:"id"`
		PreviousSecretUntil *time.Time `json:"previous_secret_until"`
	}
	adminJSON(t, http.MethodGet, "/air/keys?user=rotating", "", &listed)
	if len(listed) != 1 || listed[0].PreviousSecretUntil == nil || time.Until(*listed[0].PreviousSecretUntil) < 23*time.Hour {
		t.Errorf("the key after the regenerate: %+v, want the old secret valid for a day", listed)
	}

	demo := b.tab(demoUser, demoPassword)
	var status string
	b.run(demo,
		chromedp.Navigate(baseURL+"/console/operators/alerts"),
		chromedp.WaitVisible(`main`, chromedp.ByQuery),
		chromedp.Text(`main`, &status, chromedp.ByQuery),
	)
	if strings.Contains(status, eventID) || !strings.Contains(status, "admins") {
		t.Errorf("a user who is not an operator sees: %q", status)
	}
}
