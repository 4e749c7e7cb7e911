package integration

import (
	"fmt"
	"net/http"
	"os"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestConsoleFitsAPhone opens every console page, as a user and as an
// admin, at a desktop width and at a 390×844 phone's, keeps a screenshot
// of each, and checks that no page is wider than the phone's screen: the
// header wraps, and tables and charts scroll inside their own box.
func TestConsoleFitsAPhone(t *testing.T) {
	prices, err := os.ReadFile("../prices.example.json")
	if err != nil {
		t.Fatal(err)
	}
	startGateway(t, gatewayOptions{Site: consoleSite, Prices: string(prices)})
	// Something to show: keys with long names and limits, usage over two
	// models, an image task.
	var firstID string
	for i, name := range []string{"a-key-with-a-rather-long-name-for-a-phone", "ci"} {
		var k struct{ ID, Key string }
		if st := adminJSON(t, http.MethodPost, "/air/keys", fmt.Sprintf(`{"user":%q,"name":%q}`, demoUser, name), &k); st != http.StatusCreated {
			t.Fatalf("creating key %q: %d", name, st)
		}
		secret, id := k.Key, k.ID
		if i == 0 {
			firstID = id
		}
		if st := adminJSON(t, http.MethodPut, "/air/budgets/key/"+id, `{"total":"5.00","rpm":60,"tpm":100000}`, nil); st != http.StatusOK {
			t.Fatalf("key %d's budget: %d", i, st)
		}
		for _, model := range []string{"mock-gpt", "mock-reasoner"} {
			if st, _, body := postChat(t, secret, fmt.Sprintf(`{"model":%q,"messages":[{"role":"user","content":"hi"}]}`, model)); st != 200 {
				t.Fatalf("chat: %d %s", st, body)
			}
		}
		if i == 0 {
			if st, _, body := call(t, http.MethodPost, "/v1/tasks", secret, `{"model":"mock-image","prompt":"a red fox","size":"256x256"}`); st >= 300 {
				t.Fatalf("task: %d %s", st, body)
			}
		}
	}
	// A refused request, for the refusals lists.
	if st, _, _ := postChat(t, "sk-air-not-a-key-of-this-gateway-000000000000", `{"model":"mock-gpt","messages":[]}`); st != http.StatusUnauthorized {
		t.Fatalf("a wrong key: %d", st)
	}
	b := newBrowser(t)
	console := baseURL + "/console"
	for _, who := range []struct {
		user, password string
		pages          []string
	}{
		{demoUser, demoPassword, []string{"keys", "usage", "tasks", "playground", "signout"}},
		{adminUser, adminPassword, []string{"keys", "operators", "operators/keys", "operators/keys/" + firstID + "/edit", "operators/spend", "operators/teams", "operators/ledger", "operators/refusals", "operators/audit"}},
	} {
		tab := b.tab(who.user, who.password)
		for _, size := range []struct {
			name          string
			width, height int64
			mobile        bool
		}{{"desktop", 1280, 900, false}, {"phone", 390, 844, true}} {
			var opts []chromedp.EmulateViewportOption
			if size.mobile {
				opts = append(opts, chromedp.EmulateMobile, chromedp.EmulateScale(3))
			}
			b.run(tab, chromedp.EmulateViewport(size.width, size.height, opts...))
			for _, page := range who.pages {
				var width int64
				var culprit string
				b.run(tab,
					chromedp.Navigate(console+"/"+page),
					chromedp.WaitVisible(`main h1`, chromedp.ByQuery),
					chromedp.Evaluate(`Math.max(document.documentElement.scrollWidth, document.body.scrollWidth)`, &width),
					// The outermost element that sticks out, to name in a failure.
					chromedp.Evaluate(fmt.Sprintf(`(() => {
						const scrolls = e => { for (let p = e.parentElement; p && p !== document.body; p = p.parentElement) {
							if (['auto', 'scroll', 'hidden'].includes(getComputedStyle(p).overflowX)) return true } return false };
						for (const e of document.querySelectorAll('body *')) { const r = e.getBoundingClientRect();
							if (r.right > %d + 1 && !scrolls(e)) return e.tagName + (e.id ? '#' + e.id : '') + ' ' + Math.round(r.right) + 'px' }
						return '' })()`, size.width), &culprit),
				)
				b.screenshot(tab, fmt.Sprintf("%s-%s-%s", who.user, size.name, pageName(page)))
				if width > size.width {
					t.Errorf("%s's %s page at %d px is %d px wide (%s): it scrolls sideways", who.user, page, size.width, width, culprit)
				}
			}
		}
		// On a phone the header still shows who is signed in and every
		// link, inside the screen.
		var inside bool
		b.run(tab, chromedp.Evaluate(`[...document.querySelectorAll('header a, header .who')].every(e => { const r = e.getBoundingClientRect(); return r.right <= window.innerWidth && r.left >= 0 })`, &inside))
		if !inside {
			t.Errorf("%s: a header link or the user's name lies outside a phone's screen", who.user)
		}
	}
}

// pageName is page fit for a file name.
func pageName(page string) string {
	out := []byte(page)
	for i, c := range out {
		if c == '/' {
			out[i] = '-'
		}
	}
	return string(out)
}
