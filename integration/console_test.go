package integration

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"image"
	"image/png"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/caddy-air/caddy-air/billing"
)

// The demo users of Caddyfile.example, whose passwords the README gives.
const (
	demoUser, demoPassword   = "demo", "air-demo-console"
	adminUser, adminPassword = "admin", "air-demo-admin"
)

// consoleSite serves the console as Caddyfile.example does, with its demo
// users' hashes.
const consoleSite = `
	handle /console/* {
		air_signin_limit
		basic_auth {
			demo $2a$11$Jr.wdZNkM46ccJ2WdRLTA.YZT45qr/Z.OPDZMq5sc/a5G3Uyf83eq
			admin $2a$11$qCx5LqWOJErmcbuRUPXJHuGrH2/zqLAkrA4qpI1GEQG9.sXooXFnq
		}
		air_console {
			admins admin
		}
	}
	handle_errors 401 {
		handle /console/* {
			air_console
		}
	}
`

// browser is a headless Chromium; each tab signs in as one user.
type browser struct {
	t     *testing.T
	alloc context.Context
	first context.Context
	dir   string
}

// newBrowser starts Debian's chromium. A machine without it fails the
// test: scripts/test.sh and CI install it.
func newBrowser(t *testing.T) *browser {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatal("chromium is not installed (apt-get install chromium): the console's browser tests need it")
	}
	// The profile is removed once the browser has exited (cleanups run
	// last-in first-out); a t.TempDir would fail the test if chromium
	// were still writing to it.
	profile, err := os.MkdirTemp("", "air-console-chromium")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(profile) })
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path), chromedp.NoSandbox, chromedp.Headless,
		chromedp.WindowSize(1280, 1000), chromedp.Flag("disable-gpu", true),
		chromedp.UserDataDir(profile))
	alloc, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancel)
	return &browser{t: t, alloc: alloc, dir: t.ArtifactDir()}
}

// tab opens a tab that sends user's basic-auth credentials.
func (b *browser) tab(user, password string) context.Context {
	b.t.Helper()
	// The first tab starts the browser; the others are tabs of it.
	parent := b.alloc
	if b.first != nil {
		parent = b.first
	}
	ctx, cancel := chromedp.NewContext(parent)
	b.t.Cleanup(cancel)
	if b.first == nil {
		b.first = ctx
	}
	ctx, cancelT := context.WithTimeout(ctx, 3*time.Minute)
	b.t.Cleanup(cancelT)
	auth := base64.StdEncoding.EncodeToString([]byte(user + ":" + password))
	b.run(ctx, network.Enable(), network.SetExtraHTTPHeaders(network.Headers{"Authorization": "Basic " + auth}))
	return ctx
}

// run runs actions in ctx and fails the test on error.
func (b *browser) run(ctx context.Context, actions ...chromedp.Action) {
	b.t.Helper()
	if err := chromedp.Run(ctx, actions...); err != nil {
		b.t.Fatalf("browser: %v", err)
	}
}

// screenshot saves the page as name.png in the test's output folder and
// checks that it shows something: a blank or one-colour page fails.
func (b *browser) screenshot(ctx context.Context, name string) {
	b.t.Helper()
	var buf []byte
	b.run(ctx, chromedp.FullScreenshot(&buf, 100))
	path := filepath.Join(b.dir, name+".png")
	if err := os.WriteFile(path, buf, 0o644); err != nil {
		b.t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(buf))
	if err != nil {
		b.t.Fatalf("screenshot %s: %v", name, err)
	}
	if n := distinctColours(img); n < 16 {
		b.t.Fatalf("screenshot %s (%s) looks blank: %d distinct colours", name, path, n)
	}
	b.t.Logf("screenshot %s", path)
}

// distinctColours counts the colours of img, up to 1000.
func distinctColours(img image.Image) int {
	seen := map[[4]uint32]bool{}
	bounds := img.Bounds()
	for y := bounds.Min.Y; y < bounds.Max.Y; y += 2 {
		for x := bounds.Min.X; x < bounds.Max.X; x += 2 {
			r, g, bl, a := img.At(x, y).RGBA()
			seen[[4]uint32{r, g, bl, a}] = true
			if len(seen) >= 1000 {
				return len(seen)
			}
		}
	}
	return len(seen)
}

// shortAmount is the amount s (nine decimals, as the admin API writes
// it) as the console shows it: exact, to the cent or its last non-zero
// decimal.
func shortAmount(t *testing.T, s string) string {
	t.Helper()
	a, err := billing.ParseAmount(s)
	if err != nil {
		t.Fatalf("amount %q: %v", s, err)
	}
	return a.Short()
}

// usageTotal is what `caddy air usage --user <user>` prints as the total
// cost: the admin API's report.
func usageTotal(t *testing.T, user string) string {
	t.Helper()
	var rep struct {
		Totals []struct {
			Currency string `json:"currency"`
			Cost     string `json:"cost"`
		} `json:"totals"`
	}
	if st := adminJSON(t, http.MethodGet, "/air/usage?user="+user, "", &rep); st != http.StatusOK || len(rep.Totals) != 1 {
		t.Fatalf("usage: status %d, %+v", st, rep)
	}
	return rep.Totals[0].Cost + " " + rep.Totals[0].Currency
}

func TestConsoleInBrowser(t *testing.T) {
	prices, err := os.ReadFile("../prices.example.json")
	if err != nil {
		t.Fatal(err)
	}
	startGateway(t, gatewayOptions{Site: consoleSite, Prices: string(prices), MockOptions: "chunk_delay 150ms"})
	b := newBrowser(t)
	console := baseURL + "/console"

	// Anonymous: 401, nothing shown.
	if st, _, body := call(t, http.MethodGet, "/console/keys", "", ""); st != http.StatusUnauthorized || strings.Contains(string(body), "<table") {
		t.Fatalf("anonymous console: %d %s", st, body)
	}

	// The demo user signs in and creates a key; its secret is shown once.
	demo := b.tab(demoUser, demoPassword)
	var secret, keyID string
	b.run(demo,
		chromedp.Navigate(console+"/"),
		chromedp.WaitVisible(`#create-key`, chromedp.ByQuery),
		chromedp.SendKeys(`#create-key input[name=name]`, "browser-key", chromedp.ByQuery),
		chromedp.SendKeys(`#create-key input[name=models]`, "mock-gpt, mock-im*", chromedp.ByQuery),
		chromedp.SendKeys(`#create-key input[name=limit]`, "5.00", chromedp.ByQuery),
		chromedp.Click(`#create-key button[type=submit]`, chromedp.ByQuery),
		chromedp.WaitVisible(`#secret`, chromedp.ByID),
		chromedp.Text(`#secret`, &secret, chromedp.ByID),
		chromedp.AttributeValue(`#keys tbody tr`, "data-key-id", &keyID, nil, chromedp.ByQuery),
	)
	if !strings.HasPrefix(secret, "sk-air-") || keyID == "" {
		t.Fatalf("created key: secret %q, id %q", secret, keyID)
	}
	var keyRow string
	b.run(demo, chromedp.Text(fmt.Sprintf(`tr[data-key-id=%q]`, keyID), &keyRow, chromedp.ByQuery))
	if !strings.Contains(keyRow, "mock-gpt, mock-im*") || !strings.Contains(keyRow, "active") || !strings.Contains(keyRow, "5.00") {
		t.Errorf("the new key's row: %q, want its models, spend limit and state", keyRow)
	}
	// The key's scope is enforced: a model outside it gets 403.
	if st, _, body := call(t, http.MethodPost, "/v1/chat/completions", secret, `{"model":"mock-reasoner","messages":[{"role":"user","content":"x"}]}`); st != http.StatusForbidden || decodeError(t, body).code() != "model_not_allowed" {
		t.Errorf("a model outside the key's scope: %d %s", st, body)
	}
	b.screenshot(demo, "keys-created")

	// The key works over raw HTTP, and the request shows on the usage page
	// with its exact cost, and the total `caddy air usage` reports.
	st, _, body := call(t, http.MethodPost, "/v1/chat/completions", secret, `{"model":"mock-gpt","messages":[{"role":"user","content":"Hello from the console test"}]}`)
	if st != http.StatusOK {
		t.Fatalf("chat with the console's key: %d %s", st, body)
	}
	recs := ledgerOf(t, demoUser)
	if len(recs) != 1 || recs[0].KeyID != keyID || recs[0].Cost == "" {
		t.Fatalf("ledger after one request: %+v", recs)
	}
	wantCost := shortAmount(t, recs[0].Cost) + " USD" // prices.example.json's currency
	var rowCost, totalCost, keyCost string
	b.run(demo,
		chromedp.Navigate(console+"/usage"),
		chromedp.WaitVisible(`#ledger`, chromedp.ByID),
		chromedp.Text(fmt.Sprintf(`#ledger tr[data-request-id=%q] td.cost`, recs[0].ID), &rowCost, chromedp.ByQuery),
		chromedp.Text(`#usage-report tfoot td.cost`, &totalCost, chromedp.ByQuery),
		chromedp.Text(fmt.Sprintf(`#usage-by-key tr[data-key-id=%q] td.cost`, keyID), &keyCost, chromedp.ByQuery),
	)
	// The day's bar is split by key as well as by model.
	var keyLegend string
	b.run(demo, chromedp.Text(`#charts-by-key figure ul.legend`, &keyLegend, chromedp.ByQuery))
	if !strings.Contains(keyLegend, keyID) {
		t.Errorf("the chart by key's legend %q lacks the key %s", keyLegend, keyID)
	}
	if keyCost != wantCost {
		t.Errorf("usage by key shows the key's cost as %q, the ledger has %q", keyCost, wantCost)
	}
	if rowCost != wantCost {
		t.Errorf("usage page shows the request's cost as %q, the ledger has %q", rowCost, wantCost)
	}
	if want := usageTotal(t, demoUser); totalCost != shortAmount(t, strings.TrimSuffix(want, " USD"))+" USD" {
		t.Errorf("usage page total %q, `caddy air usage` total %q", totalCost, want)
	}
	b.screenshot(demo, "usage")

	// An image task shows on the tasks page with its thumbnail, which the
	// Content-Security-Policy lets load (same-origin media).
	st, _, body = call(t, http.MethodPost, "/v1/tasks", secret, `{"model":"mock-image","prompt":"a red fox","size":"256x256"}`)
	if st != http.StatusAccepted {
		t.Fatalf("image task: %d %s", st, body)
	}
	var taskState string
	var thumbWidth int
	b.run(demo,
		chromedp.Navigate(console+"/tasks"),
		chromedp.WaitVisible(`#tasks img.thumb`, chromedp.ByQuery),
		chromedp.Text(`#tasks td[class^=status-]`, &taskState, chromedp.ByQuery),
		chromedp.Poll(`document.querySelector("#tasks img.thumb").complete`, nil),
		chromedp.Evaluate(`document.querySelector("#tasks img.thumb").naturalWidth`, &thumbWidth),
	)
	if taskState != "succeeded" || thumbWidth == 0 {
		t.Errorf("tasks page: status %q, thumbnail width %d", taskState, thumbWidth)
	}
	b.screenshot(demo, "tasks")

	// Revoking the key, after confirming, makes the next call get 401.
	var state string
	b.run(demo,
		chromedp.Navigate(console+"/keys"),
		chromedp.Click(fmt.Sprintf(`tr[data-key-id=%q] a.danger`, keyID), chromedp.ByQuery),
		chromedp.WaitVisible(`#revoke-key`, chromedp.ByID),
	)
	b.screenshot(demo, "revoke-confirm")
	b.run(demo,
		chromedp.Click(`#revoke-key button[type=submit]`, chromedp.ByQuery),
		chromedp.WaitVisible(`#keys`, chromedp.ByID),
		chromedp.Text(fmt.Sprintf(`tr[data-key-id=%q] td[class^=state-]`, keyID), &state, chromedp.ByQuery),
	)
	if state != "revoked" {
		t.Errorf("the key's state after revoking: %q", state)
	}
	if st, _, body := call(t, http.MethodPost, "/v1/chat/completions", secret, `{"model":"mock-gpt","messages":[{"role":"user","content":"again"}]}`); st != http.StatusUnauthorized {
		t.Fatalf("a revoked key: %d %s", st, body)
	}

	// The playground streams an answer from the mock provider, then shows
	// the request's tokens and cost, billed to the user.
	testPlayground(t, b, demo, console)

	// An admin sets the demo user's budget; the user's next request gets
	// 429 insufficient_quota.
	admin := b.tab(adminUser, adminPassword)
	var limits string
	b.run(admin,
		chromedp.Navigate(console+"/operators"),
		chromedp.WaitVisible(`#set-budget`, chromedp.ByID),
		chromedp.SendKeys(`#set-budget input[name=id]`, demoUser, chromedp.ByQuery),
		chromedp.SendKeys(`#set-budget input[name=monthly]`, "0.000000001", chromedp.ByQuery),
		chromedp.Click(`#set-budget button[type=submit]`, chromedp.ByQuery),
	)
	// The form's answer is a new page: wait for its row to show the
	// limit, not for the row of the page the click left (which matched at
	// once on a loaded machine). The row is read by script, never by a
	// node id, which the navigation may take away between two steps.
	if limits = waitText(admin, `#user-list tr[data-user=demo]`, "monthly 0.000000001"); !strings.Contains(limits, "monthly 0.000000001") {
		t.Errorf("the operators' page shows demo's limits as %q", limits)
	}
	b.screenshot(admin, "operators")
	secret2, key2 := createKey(t, demoUser)
	st, _, body = call(t, http.MethodPost, "/v1/chat/completions", secret2, `{"model":"mock-gpt","messages":[{"role":"user","content":"over budget"}]}`)
	if st != http.StatusTooManyRequests || decodeError(t, body).code() != "insufficient_quota" {
		t.Fatalf("a request over the budget set in the console: %d %s", st, body)
	}

	testOperatorTools(t, b, admin, console, recs[0].ID, key2)

	// The demo user is no admin.
	if st, _, _ := call(t, http.MethodGet, "/console/operators", "", "", "Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(demoUser+":"+demoPassword))); st != http.StatusForbidden {
		t.Errorf("the demo user on the operators' page: %d", st)
	}
}

// testOperatorTools has the admin set a key's rate limits, see them in the
// budgets and the admin API, find the demo user's request in a ledger
// search across users, and read the price table as loaded.
func testOperatorTools(t *testing.T, b *browser, admin context.Context, console, requestID, keyID string) {
	t.Helper()
	b.run(admin,
		chromedp.Navigate(console+"/operators"),
		chromedp.WaitVisible(`#set-budget`, chromedp.ByID),
		chromedp.SetValue(`#set-budget select[name=scope]`, "key", chromedp.ByQuery),
		chromedp.SendKeys(`#set-budget input[name=id]`, keyID, chromedp.ByQuery),
		chromedp.SendKeys(`#set-budget input[name=rpm]`, "3", chromedp.ByQuery),
		chromedp.SendKeys(`#set-budget input[name=tpm]`, "4000", chromedp.ByQuery),
		chromedp.Click(`#set-budget button[type=submit]`, chromedp.ByQuery),
	)
	row := fmt.Sprintf(`#budget-list tr[data-scope=key][data-id=%q]`, keyID)
	if got := waitText(admin, row, "4000"); !strings.Contains(got, "3") || !strings.Contains(got, "4000") {
		t.Errorf("the budgets list shows the key's rate limits as %q", got)
	}
	var lim struct {
		Limits struct{ RPM, TPM int64 } `json:"limits"`
	}
	adminJSON(t, http.MethodGet, "/air/budgets/key/"+keyID, "", &lim)
	if lim.Limits.RPM != 3 || lim.Limits.TPM != 4000 {
		t.Errorf("GET /air/budgets/key/%s after the console set it: %+v", keyID, lim)
	}
	var price string
	b.run(admin, chromedp.Text(`#price-list tr[data-model=mock-gpt]`, &price, chromedp.ByQuery))
	if !strings.Contains(price, "32000") || !strings.Contains(price, "128000") || !strings.Contains(price, "×1.25 / ×2 / ×0.1") {
		t.Errorf("the price table shows mock-gpt as %q, want its tiers and cache multipliers", price)
	}
	var upstreams string
	b.run(admin, chromedp.Text(`#provider-list tr[data-provider=mock] td.upstreams`, &upstreams, chromedp.ByQuery))
	if !strings.Contains(upstreams, "available, breaker closed") {
		t.Errorf("the mock provider's upstreams show as %q", upstreams)
	}
	b.screenshot(admin, "operators-key-limits")

	// A search across users (no user named) finds the demo user's request.
	b.run(admin,
		chromedp.Navigate(console+"/operators/ledger"),
		chromedp.WaitVisible(`#ledger-filter`, chromedp.ByID),
		chromedp.SendKeys(`#ledger-filter input[name=model]`, "mock-gpt", chromedp.ByQuery),
		chromedp.SetValue(`#ledger-filter select[name=outcome]`, "ok", chromedp.ByQuery),
		chromedp.Click(`#ledger-filter button[type=submit]`, chromedp.ByQuery),
	)
	// The form's answer is a new page, whose address has the filters (the
	// page the click left lists the request too, unfiltered).
	if loc := waitText(admin, "", "model=mock-gpt"); !strings.Contains(loc, "outcome=ok") {
		t.Fatalf("the ledger search's answer is at %q", loc)
	}
	found := waitText(admin, fmt.Sprintf(`#ledger-search tr[data-request-id=%q]`, requestID), demoUser)
	if !strings.Contains(found, demoUser) || !strings.Contains(found, "USD") {
		t.Errorf("the ledger search shows the demo user's request as %q", found)
	}
	var models []string
	b.run(admin, chromedp.Evaluate(`[...document.querySelectorAll('#ledger-search tbody tr')].map(r => r.cells[4].innerText)`, &models))
	if len(models) == 0 || slices.ContainsFunc(models, func(m string) bool { return m != "mock-gpt" }) {
		t.Errorf("the search for mock-gpt lists models %q", models)
	}
	b.screenshot(admin, "ledger-search")
}

// waitText polls the text of the element selector matches in tab (""
// polls the page's address) until it contains want (a form's answer is a
// new page: the element of the page the click left may match first), for
// up to 30 seconds, and returns the last text read. It reads by script,
// never by a node id, which a navigation may take away between two steps.
func waitText(tab context.Context, selector, want string) string {
	js := fmt.Sprintf(`(() => { const r = document.querySelector(%q); return r ? r.innerText : ''; })()`, selector)
	if selector == "" {
		js = `location.href`
	}
	var got string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if err := chromedp.Run(tab, chromedp.Evaluate(js, &got)); err == nil && strings.Contains(got, want) {
			break
		}
	}
	return got
}

// testPlayground sends a message in the playground and watches the answer
// stream in, then settle with the cost the ledger recorded.
func testPlayground(t *testing.T, b *browser, tab context.Context, console string) {
	t.Helper()
	b.run(tab,
		chromedp.Navigate(console+"/playground"),
		chromedp.WaitVisible(`#playground`, chromedp.ByID),
		chromedp.SetValue(`#pg-model`, "mock-gpt", chromedp.ByID),
		chromedp.SendKeys(`#pg-message`, "Say something streamed", chromedp.ByID),
		chromedp.Click(`#pg-send`, chromedp.ByID),
	)
	// While the mock sends its chunks (150 ms apart), part of the answer
	// is on the page before the request has settled.
	var partial bool
	deadline := time.Now().Add(60 * time.Second)
	var answer, settled string
	for time.Now().Before(deadline) {
		var res []string
		b.run(tab, chromedp.Evaluate(`[ (document.querySelector(".msg.assistant")||{}).textContent || "", document.getElementById("pg-settled").dataset.state || "" ]`, &res))
		answer, settled = res[0], res[1]
		if answer != "" && settled == "" {
			partial = true
		}
		if settled == "settled" {
			break
		}
		time.Sleep(30 * time.Millisecond)
	}
	if settled != "settled" || answer == "" {
		t.Fatalf("the playground did not settle: answer %q, state %q", answer, settled)
	}
	if !partial {
		t.Error("the playground's answer never showed before it settled: it was not streamed")
	}
	var shown string
	b.run(tab, chromedp.Text(`#pg-settled`, &shown, chromedp.ByID))
	var rec *ledgerRecord
	for _, r := range ledgerOf(t, demoUser) {
		if r.KeyID == "console" {
			rec = &r
		}
	}
	if rec == nil {
		t.Fatal("the playground request is not in the user's ledger")
	}
	if !strings.Contains(shown, rec.Cost+" USD") || !strings.Contains(shown, rec.ID) {
		t.Errorf("the playground shows %q; the ledger has %s costing %s USD", shown, rec.ID, rec.Cost)
	}
	b.screenshot(tab, "playground")
}
