package integration

import (
	"encoding/base64"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestConsoleAuditInBrowser checks the operators' audit page in Chromium:
// a key an operator creates in the console and a limit set over the admin
// API are listed, newest first, with who made them; the filter narrows
// the list; a user who is no operator does not see the page.
func TestConsoleAuditInBrowser(t *testing.T) {
	startGateway(t, gatewayOptions{Site: consoleSite})
	b := newBrowser(t)
	console := baseURL + "/console"
	admin := b.tab(adminUser, adminPassword)
	var keyID string
	b.run(admin,
		chromedp.Navigate(console+"/operators/keys"),
		chromedp.WaitVisible(`#create-key-for`, chromedp.ByID),
		chromedp.SendKeys(`#create-key-for input[name=user]`, "erin", chromedp.ByQuery),
		chromedp.SendKeys(`#create-key-for input[name=name]`, "audited", chromedp.ByQuery),
		chromedp.Click(`#create-key-for button[type=submit]`, chromedp.ByQuery),
	)
	if got := waitText(admin, "main", "erin"); !strings.Contains(got, "erin") {
		t.Fatalf("after creating a key for erin, the page shows %q", got)
	}
	var keys []struct{ ID, User string }
	adminJSON(t, http.MethodGet, "/air/keys?user=erin", "", &keys)
	if len(keys) != 1 {
		t.Fatalf("erin's keys: %+v", keys)
	}
	keyID = keys[0].ID
	if st := adminJSON(t, http.MethodPut, "/air/budgets/key/"+keyID, `{"rpm":9}`, nil); st != http.StatusOK {
		t.Fatalf("setting the key's limits: %d", st)
	}
	b.run(admin, chromedp.Navigate(console+"/operators/audit"), chromedp.WaitVisible(`#audit`, chromedp.ByID))
	var rows []string
	b.run(admin, chromedp.Evaluate(`[...document.querySelectorAll('#audit tbody tr')].map(r => r.innerText)`, &rows))
	if len(rows) < 2 || !strings.Contains(rows[0], "budget.set") || !strings.Contains(rows[0], "admin-api") || !strings.Contains(rows[0], `"rpm":9`) ||
		!strings.Contains(rows[1], "key.create") || !strings.Contains(rows[1], adminUser) || !strings.Contains(rows[1], "console") || !strings.Contains(rows[1], keyID) {
		t.Fatalf("the audit page lists %q", rows)
	}
	if strings.Contains(strings.Join(rows, "\n"), "sk-air-") {
		t.Error("the audit page shows a key's secret")
	}
	b.screenshot(admin, "audit")
	b.run(admin,
		chromedp.SendKeys(`#audit-filter input[name=action]`, "key.create", chromedp.ByQuery),
		chromedp.Click(`#audit-filter button[type=submit]`, chromedp.ByQuery),
	)
	waitText(admin, "", "action=key.create")
	if got := waitText(admin, "#audit tbody", "key.create"); strings.Contains(got, "budget.set") || !strings.Contains(got, keyID) {
		t.Errorf("the audit page filtered by key.create lists %q", got)
	}
	demo := b.tab(demoUser, demoPassword)
	var text string
	b.run(demo, chromedp.Navigate(console+"/operators/audit"), chromedp.Text(`main`, &text, chromedp.ByQuery))
	if strings.Contains(text, "key.create") || strings.Contains(text, keyID) {
		t.Errorf("the demo user sees the audit trail: %q", text)
	}
	auth := "Basic " + base64.StdEncoding.EncodeToString([]byte(demoUser+":"+demoPassword))
	if st, _, body := call(t, http.MethodGet, "/console/operators/audit.csv", "", "", "Authorization", auth); st/100 == 2 || strings.Contains(string(body), keyID) {
		t.Errorf("the demo user's audit export: %d", st)
	}
}
