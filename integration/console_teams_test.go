package integration

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"golang.org/x/crypto/bcrypt"
)

// The console users of TestConsoleTeams: an operator, the admins of
// teams alpha and beta, and a member of each.
var teamConsoleUsers = []string{"ops", "lead-a", "member-a", "lead-b", "member-b"}

// teamConsoleSite serves the console with basic_auth users of the given
// bcrypt hashes (each user's password is its name and "-pw") and ops as
// the operator.
func teamConsoleSite(t *testing.T) string {
	t.Helper()
	var users strings.Builder
	for _, u := range teamConsoleUsers {
		h, err := bcrypt.GenerateFromPassword([]byte(u+"-pw"), 4)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&users, "\t\t\t%s %s\n", u, h)
	}
	return `
	handle /console/* {
		basic_auth {
` + users.String() + `		}
		air_console {
			admins ops
		}
	}
`
}

// asUser is the header pair of user's basic-auth credentials, for call.
func asUser(user string) []string {
	return []string{"Authorization", "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+user+"-pw"))}
}

// consolePostForm posts fields to path from tab's page with the page's anti-CSRF
// token, as the page's own forms do, and returns the answer's status (a
// redirect is followed: 200 for a change made).
func consolePostForm(t *testing.T, b *browser, tab context.Context, path string, fields map[string]string) int {
	t.Helper()
	js := fmt.Sprintf(`(async () => {
		const f = new URLSearchParams(%s);
		f.set('csrf_token', document.querySelector('meta[name=csrf-token]').content);
		const ft = document.querySelector('input[name=form_token]');
		if (ft && !f.has('form_token')) f.set('form_token', ft.value);
		const r = await fetch(%q, {method: 'POST', body: f});
		return r.status;
	})()`, jsObject(fields), path)
	var status int
	b.run(tab, chromedp.Evaluate(js, &status, func(p *runtime.EvaluateParams) *runtime.EvaluateParams { return p.WithAwaitPromise(true) }))
	return status
}

// jsObject writes fields as a JavaScript object literal.
func jsObject(fields map[string]string) string {
	var parts []string
	for k, v := range fields {
		parts = append(parts, fmt.Sprintf("%q: %q", k, v))
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// TestConsoleTeams drives the team pages in Chromium as each role: the
// operator sees every team and the spend by team and tag (SVG charts);
// a team admin sees and changes only its own team (members, their keys,
// cost by tag), and every attempt on the other team's members or keys,
// through the page's own endpoints, is refused and changes nothing; a
// plain member and the other pages' non-owners get 403.
func TestConsoleTeams(t *testing.T) {
	prices, err := os.ReadFile("../prices.example.json")
	if err != nil {
		t.Fatal(err)
	}
	startGateway(t, gatewayOptions{Site: teamConsoleSite(t), Prices: string(prices)})
	secrets, ids := map[string]string{}, map[string]string{}
	for _, u := range teamConsoleUsers[1:] {
		secrets[u], ids[u] = createKey(t, u)
	}
	for _, step := range []struct{ method, path, body string }{
		{http.MethodPost, "/air/teams", `{"name":"alpha"}`},
		{http.MethodPost, "/air/teams", `{"name":"beta"}`},
		{http.MethodPut, "/air/teams/alpha/members/lead-a", `{"admin":true}`},
		{http.MethodPut, "/air/teams/alpha/members/member-a", ``},
		{http.MethodPut, "/air/teams/beta/members/lead-b", `{"admin":true}`},
		{http.MethodPut, "/air/teams/beta/members/member-b", ``},
	} {
		if st := adminJSON(t, step.method, step.path, step.body, nil); st >= 300 {
			t.Fatalf("%s %s: %d", step.method, step.path, st)
		}
	}
	for user, tag := range map[string]string{"member-a": "proj:alpha-x", "member-b": "proj:beta-y"} {
		if st, _, body := call(t, http.MethodPost, "/v1/chat/completions", secrets[user], `{"model":"mock-gpt","messages":[{"role":"user","content":"hi"}]}`, "x-air-tags", tag); st != http.StatusOK {
			t.Fatalf("%s's request: %d %s", user, st, body)
		}
		waitLedger(t, user, 1)
	}

	// Who may open which page.
	for i, tc := range []struct {
		user, page string
		want       int
	}{
		{"lead-a", "/console/team", http.StatusOK},
		{"member-a", "/console/team", http.StatusForbidden},
		{"ops", "/console/team", http.StatusForbidden}, // an operator administers no team
		{"ops", "/console/operators/teams", http.StatusOK},
		{"lead-a", "/console/operators/teams", http.StatusForbidden},
		{"lead-a", "/console/operators/spend", http.StatusForbidden},
	} {
		if st, _, _ := call(t, http.MethodGet, tc.page, "", "", asUser(tc.user)...); st != tc.want {
			t.Errorf("Test %d: %s opens %s: %d, want %d", i, tc.user, tc.page, st, tc.want)
		}
	}

	b := newBrowser(t)
	console := baseURL + "/console"

	// The operator: every team, and spend by team and tag with charts.
	ops := b.tab("ops", "ops-pw")
	b.run(ops, chromedp.Navigate(console+"/operators/teams"), chromedp.WaitVisible(`#team-list`, chromedp.ByID))
	if got := waitText(ops, `#team-list tr[data-team=beta]`, "member-b"); !strings.Contains(got, "lead-b (admin)") {
		t.Errorf("the operators' teams list shows beta as %q", got)
	}
	b.run(ops, chromedp.Navigate(console+"/operators/spend"), chromedp.WaitVisible(`#spend-by-team-table`, chromedp.ByID))
	var alphaRow, tagRow string
	var bars int
	b.run(ops,
		chromedp.Text(`#spend-by-team-table tr[data-team=alpha]`, &alphaRow, chromedp.ByQuery),
		chromedp.Text(`#spend-by-tag-table tr[data-tag="proj:beta-y"]`, &tagRow, chromedp.ByQuery),
		chromedp.Evaluate(`document.querySelectorAll('#spend-by-team-tag svg rect').length`, &bars),
	)
	if !strings.Contains(alphaRow, "USD") || !strings.Contains(tagRow, "USD") || bars < 4 {
		t.Errorf("spend by team: %q; by tag: %q; %d bars in the team and tag charts (want 2 each at least)", alphaRow, tagRow, bars)
	}
	b.screenshot(ops, "spend-by-team-and-tag")
	t.Log("the operator's pages checked")

	// Team alpha's admin: its own team only.
	lead := b.tab("lead-a", "lead-a-pw")
	b.run(lead, chromedp.Navigate(console+"/team"), chromedp.WaitVisible(`#team-members`, chromedp.ByID))
	var members, keyList, tags string
	b.run(lead,
		chromedp.Text(`#team-members tbody`, &members, chromedp.ByQuery),
		chromedp.Text(`#team-keys tbody`, &keyList, chromedp.ByQuery),
		chromedp.Text(`#team-tags tbody`, &tags, chromedp.ByQuery),
		chromedp.Evaluate(`document.querySelectorAll('#team-by-tag svg rect').length`, &bars),
	)
	if !strings.Contains(members, "member-a") || strings.Contains(members, "-b") {
		t.Errorf("alpha's members show as %q", members)
	}
	if !strings.Contains(keyList, ids["member-a"]) || strings.Contains(keyList, ids["member-b"]) || strings.Contains(keyList, ids["lead-b"]) {
		t.Errorf("alpha's keys show as %q", keyList)
	}
	if !strings.Contains(tags, "proj:alpha-x") || strings.Contains(tags, "beta") || bars < 1 {
		t.Errorf("alpha's cost by tag: %q, %d bars", tags, bars)
	}
	// Adds a member through the form, then removes it.
	b.run(lead,
		chromedp.SendKeys(`#add-member input[name=user]`, "new-a", chromedp.ByQuery),
		chromedp.Click(`#add-member button[type=submit]`, chromedp.ByQuery),
	)
	b.run(lead,
		chromedp.WaitVisible(`#team-members tr[data-user=new-a] button`, chromedp.ByQuery),
		chromedp.Click(`#team-members tr[data-user=new-a] button`, chromedp.ByQuery),
		chromedp.WaitNotPresent(`#team-members tr[data-user=new-a]`, chromedp.ByQuery),
	)
	t.Log("the team admin added and removed a member")
	b.run(lead, chromedp.WaitVisible(`#team-by-tag svg`, chromedp.ByQuery))
	b.screenshot(lead, "team-admin")

	// Creates a key for its member: the secret is shown once, and works.
	b.run(lead,
		chromedp.SetValue(`#create-team-key select[name=user]`, "member-a", chromedp.ByQuery),
		chromedp.SendKeys(`#create-team-key input[name=name]`, "made-by-lead", chromedp.ByQuery),
		chromedp.Click(`#create-team-key button[type=submit]`, chromedp.ByQuery),
		chromedp.WaitVisible(`#secret`, chromedp.ByID),
	)
	var newSecret string
	b.run(lead, chromedp.Text(`#secret`, &newSecret, chromedp.ByID))
	if st, _, body := call(t, http.MethodPost, "/v1/chat/completions", newSecret, `{"model":"mock-gpt","messages":[{"role":"user","content":"x"}]}`); st != http.StatusOK {
		t.Errorf("the key alpha's admin made for member-a: %d %s", st, body)
	}
	if recs := waitLedger(t, "member-a", 2); recs[1].Team != "alpha" {
		t.Errorf("the new key's request: team %q, want alpha", recs[1].Team)
	}
	t.Log("the team admin's page checked")
	// Nothing of team beta can be changed from alpha's admin page.
	for i, tc := range []struct {
		path   string
		fields map[string]string
		want   int
	}{
		{"/console/team/members", map[string]string{"user": "member-b"}, http.StatusBadRequest},
		{"/console/team/members", map[string]string{"user": "lead-b", "admin": "on"}, http.StatusBadRequest},
		{"/console/team/members/member-b/remove", nil, http.StatusNotFound},
		{"/console/team/members/lead-b/remove", nil, http.StatusNotFound},
		{"/console/team/keys/" + ids["member-b"] + "/revoke", nil, http.StatusNotFound},
		{"/console/team/keys/" + ids["lead-b"] + "/revoke", nil, http.StatusNotFound},
		{"/console/team/keys", map[string]string{"user": "member-b", "name": "sneaky"}, http.StatusNotFound},
	} {
		if st := consolePostForm(t, b, lead, tc.path, tc.fields); st != tc.want {
			t.Errorf("Test %d: alpha's admin posts %s: %d, want %d", i, tc.path, st, tc.want)
		}
	}
	var keysB []struct{ ID string }
	if adminJSON(t, http.MethodGet, "/air/keys?user=member-b", "", &keysB); len(keysB) != 1 {
		t.Errorf("member-b's keys after alpha's admin's attempts: %+v, want the one", keysB)
	}
	var beta struct {
		Members []struct{ User string } `json:"members"`
	}
	if adminJSON(t, http.MethodGet, "/air/teams/beta", "", &beta); len(beta.Members) != 2 {
		t.Errorf("team beta after alpha's admin's attempts: %+v", beta.Members)
	}
	for _, u := range []string{"member-b", "lead-b"} {
		if st, _, body := call(t, http.MethodPost, "/v1/chat/completions", secrets[u], `{"model":"mock-gpt","messages":[{"role":"user","content":"still here"}]}`); st != http.StatusOK {
			t.Errorf("%s's key after alpha's admin's attempts: %d %s", u, st, body)
		}
	}
	// Team beta's admin cannot revoke alpha's keys either; alpha's admin
	// revokes its member's key.
	leadB := b.tab("lead-b", "lead-b-pw")
	b.run(leadB, chromedp.Navigate(console+"/team"), chromedp.WaitVisible(`#team-members`, chromedp.ByID))
	if st := consolePostForm(t, b, leadB, "/console/team/keys/"+ids["member-a"]+"/revoke", nil); st != http.StatusNotFound {
		t.Errorf("beta's admin revokes alpha's key: %d, want 404", st)
	}
	row := fmt.Sprintf(`#team-keys tr[data-key-id=%q]`, ids["member-a"])
	b.run(lead,
		chromedp.Navigate(console+"/team"),
		chromedp.Click(row+` button`, chromedp.ByQuery),
		chromedp.WaitNotPresent(row+` button`, chromedp.ByQuery),
	)
	if got := waitText(lead, row, "revoked"); !strings.Contains(got, "revoked") {
		t.Errorf("member-a's key after its revocation shows as %q", got)
	}
	if st, _, _ := call(t, http.MethodPost, "/v1/chat/completions", secrets["member-a"], `{"model":"mock-gpt","messages":[{"role":"user","content":"x"}]}`); st != http.StatusUnauthorized {
		t.Errorf("member-a's key after its team admin revoked it: %d, want 401", st)
	}
}
