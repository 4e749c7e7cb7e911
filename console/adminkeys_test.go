package console

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/caddy-air/caddy-air/billing"
	"github.com/caddy-air/caddy-air/refusals"
)

// keyRows returns the key ids of a keys table, in order.
func keyRows(body string) []string {
	var ids []string
	for _, m := range regexp.MustCompile(`data-key-id="([^"]+)"`).FindAllStringSubmatch(body, -1) {
		ids = append(ids, m[1])
	}
	return ids
}

func TestAllKeysSearchCreateRevoke(t *testing.T) {
	f := newFake()
	h := newTestConsole(t, f)
	_, _, _ = f.Create(t.Context(), "bob", NewKey{Name: "zeta", Models: []string{"claude-*"}}) // key_bob_1
	_, _, _ = f.Create(t.Context(), "carol", NewKey{Name: "Alpha"})                            // key_carol_2
	_, _, _ = f.Create(t.Context(), "bob", NewKey{})                                           // key_bob_3

	w := do(h, "alice", "GET", "/console/operators/keys", nil)
	if got := strings.Join(keyRows(w.Body.String()), ","); got != "key_carol_2,key_bob_1,key_bob_3" {
		t.Errorf("every key by name, unnamed last: got %s", got)
	}
	for i, tc := range []struct{ query, want string }{
		{"q=claude", "key_bob_1"},
		{"q=CAROL", "key_carol_2"},
		{"q=key_bob_3", "key_bob_3"},
		{"q=nobody", ""},
	} {
		w := do(h, "alice", "GET", "/console/operators/keys?"+tc.query, nil)
		if got := strings.Join(keyRows(w.Body.String()), ","); got != tc.want {
			t.Errorf("Test %d: search %s: got %q, want %q", i, tc.query, got, tc.want)
		}
	}

	// An operator creates a key for dave: the redirect shows its secret
	// once, to the operator.
	w = do(h, "alice", "POST", "/console/operators/keys", withToken(h, "alice", url.Values{"user": {"dave"}, "name": {"ci"}, "models": {"gpt-4o, o3"}}), sameOrigin...)
	page := follow(t, h, "alice", w)
	if !strings.Contains(page.Body.String(), "sk-air-secret-dave-4") || !strings.Contains(page.Body.String(), `data-user="dave"`) {
		t.Fatalf("the new key of dave and its secret are not shown:\n%s", page.Body)
	}
	if o := f.created[len(f.created)-1]; o.Name != "ci" || strings.Join(o.Models, ",") != "gpt-4o,o3" {
		t.Errorf("created %+v, want name ci and models gpt-4o, o3", o)
	}
	if again := do(h, "alice", "GET", "/console/operators/keys", nil); strings.Contains(again.Body.String(), "sk-air-secret") {
		t.Error("the secret is shown a second time")
	}
	if w := do(h, "alice", "POST", "/console/operators/keys", withToken(h, "alice", url.Values{"name": {"x"}}), sameOrigin...); w.Code != http.StatusBadRequest ||
		!strings.Contains(w.Body.String(), "name the user") {
		t.Errorf("a key for no user: %d, want 400 that says so", w.Code)
	}

	// Revoking another user's key.
	if w := do(h, "alice", "GET", "/console/operators/keys/key_carol_2/revoke", nil); !strings.Contains(w.Body.String(), `action="/console/operators/keys/key_carol_2/revoke"`) {
		t.Errorf("the confirmation does not post to the operators' revoke: %s", w.Body)
	}
	if w := do(h, "alice", "POST", "/console/operators/keys/key_carol_2/revoke", withToken(h, "alice", nil), sameOrigin...); w.Code != http.StatusSeeOther || !f.revoked("key_carol_2") {
		t.Errorf("revoking carol's key: %d, revoked %v", w.Code, f.revoked("key_carol_2"))
	}
	if w := do(h, "alice", "POST", "/console/operators/keys/key_none/revoke", withToken(h, "alice", nil), sameOrigin...); w.Code != http.StatusNotFound {
		t.Errorf("revoking no key: %d, want 404", w.Code)
	}
	if got := strings.Join(keyRows(do(h, "alice", "GET", "/console/operators/keys?state=revoked", nil).Body.String()), ","); got != "key_carol_2" {
		t.Errorf("revoked keys: %q", got)
	}
}

func TestKeysPageShowsUserLimits(t *testing.T) {
	f := newFake()
	h := newTestConsole(t, f)
	if w := do(h, "bob", "GET", "/console/keys", nil); !strings.Contains(w.Body.String(), "No limits are set for you") {
		t.Errorf("no limits: %s", w.Body)
	}
	f.budgets[budgetID(billing.ScopeUser, "bob")] = billing.Limits{Currency: "USD", Monthly: 25_000_000_000, RPM: 60}
	w := do(h, "bob", "GET", "/console/keys", nil)
	if !strings.Contains(w.Body.String(), "25.00 USD a month, 60 requests a minute") {
		t.Errorf("bob's limits are not shown:\n%s", w.Body)
	}
}

func TestSignOutAndFavicon(t *testing.T) {
	f := newFake()
	h := newTestConsole(t, f)
	w := do(h, "bob", "GET", "/console/keys", nil)
	for _, want := range []string{`href="/console/signout"`, `rel="icon" href="/console/static/favicon.svg"`} {
		if !strings.Contains(w.Body.String(), want) {
			t.Errorf("the page lacks %s", want)
		}
	}
	w = do(h, "bob", "GET", "/console/signout/now", nil)
	if w.Code != http.StatusUnauthorized || !strings.HasPrefix(w.Header().Get("WWW-Authenticate"), `Basic realm="restricted"`) ||
		!strings.Contains(w.Body.String(), `id="signed-out"`) {
		t.Errorf("sign-out: %d %q, want 401 with a Basic challenge and the signed-out page", w.Code, w.Header().Get("WWW-Authenticate"))
	}
}

func TestSpendPageAcrossUsers(t *testing.T) {
	f := newFake()
	h := newTestConsole(t, f)
	w := do(h, "alice", "GET", "/console/operators/spend?since=2026-11-01&until=2026-11-27", nil)
	if w.Code != http.StatusOK {
		t.Fatalf("spend: %d %s", w.Code, w.Body)
	}
	for _, flt := range f.filters {
		if flt.User != "" && flt.By != billing.ByDay {
			t.Errorf("the spend page's tables read one user's usage: %+v", flt)
		}
	}
	for _, id := range []string{`id="spend-by-user"`, `id="spend-by-model-table"`, `id="spend-by-key-table"`} {
		if !strings.Contains(w.Body.String(), id) {
			t.Errorf("the spend page lacks %s", id)
		}
	}
}

func TestEditKeyModelsAndExpiry(t *testing.T) {
	f := newFake()
	h := newTestConsole(t, f)
	_, _, _ = f.Create(t.Context(), "bob", NewKey{Name: "ci", Models: []string{"gpt-4o"}})
	page := do(h, "alice", "GET", "/console/operators/keys/key_bob_1/edit", nil)
	if !strings.Contains(page.Body.String(), `value="gpt-4o"`) || !strings.Contains(page.Body.String(), `value="ci"`) {
		t.Fatalf("the form is not filled with the key's:\n%s", page.Body)
	}
	w := do(h, "alice", "POST", "/console/operators/keys/key_bob_1/edit",
		withToken(h, "alice", url.Values{"name": {"ci-2"}, "models": {"claude-*, o3"}, "expires": {"2099-12-31"}}), sameOrigin...)
	if w.Code != http.StatusSeeOther {
		t.Fatalf("saving: %d %s", w.Code, w.Body)
	}
	k := f.keys[0]
	if k.Name != "ci-2" || strings.Join(k.Models, ",") != "claude-*,o3" || k.ExpiresAt == nil || k.ExpiresAt.Format("2006-01-02 15:04") != "2100-01-01 00:00" {
		t.Errorf("after the edit: %+v", k)
	}
	// The form shows the chosen day again, and clears to every model and
	// no expiry.
	if page := do(h, "alice", "GET", "/console/operators/keys/key_bob_1/edit", nil); !strings.Contains(page.Body.String(), `value="2099-12-31"`) {
		t.Errorf("the expiry is not shown as the chosen day:\n%s", page.Body)
	}
	do(h, "alice", "POST", "/console/operators/keys/key_bob_1/edit", withToken(h, "alice", url.Values{"name": {"ci-2"}}), sameOrigin...)
	if k := f.keys[0]; len(k.Models) != 0 || k.ExpiresAt != nil {
		t.Errorf("after clearing: %+v", k)
	}
	for i, tc := range []struct {
		form url.Values
		want string
	}{
		{url.Values{"expires": {"2001-01-01"}}, "today or later"},
		{url.Values{"models": {"bad["}}, "bad glob"},
	} {
		w := do(h, "alice", "POST", "/console/operators/keys/key_bob_1/edit", withToken(h, "alice", tc.form), sameOrigin...)
		if w.Code != http.StatusBadRequest || !strings.Contains(w.Body.String(), tc.want) {
			t.Errorf("Test %d: %d, want 400 with %q", i, w.Code, tc.want)
		}
	}
	if w := do(h, "alice", "GET", "/console/operators/keys/key_none/edit", nil); w.Code != http.StatusNotFound {
		t.Errorf("editing no key: %d", w.Code)
	}
}

func TestRefusedRequestsFoundByID(t *testing.T) {
	f := newFake()
	h := newTestConsole(t, f)
	f.refusals.Add(refusals.Entry{ID: "req_anon", Endpoint: "chat_completions", Status: 401, Code: "invalid_api_key", Message: "unknown API key"})
	f.refusals.Add(refusals.Entry{ID: "req_bob", User: "bob", KeyID: "key_b", Endpoint: "messages", Model: "claude-x", Status: 429, Code: "rate_limit_exceeded", Message: "too many requests"})
	f.refusals.Add(refusals.Entry{ID: "req_carol", User: "carol", Endpoint: "images", Status: 400, Message: "bad size"})
	rows := func(body string) string {
		var ids []string
		for _, m := range regexp.MustCompile(`<tr data-request-id="([^"]+)"`).FindAllStringSubmatch(body, -1) {
			ids = append(ids, m[1])
		}
		return strings.Join(ids, ",")
	}
	for i, tc := range []struct{ query, want string }{
		{"", "req_carol,req_bob,req_anon"},
		{"?id=req_anon", "req_anon"},
		{"?user=bob", "req_bob"},
		{"?id=req_none", ""},
	} {
		w := do(h, "alice", "GET", "/console/operators/refusals"+tc.query, nil)
		if got := rows(w.Body.String()); w.Code != http.StatusOK || got != tc.want {
			t.Errorf("Test %d: %s: %d %q, want %q", i, tc.query, w.Code, got, tc.want)
		}
	}
	if w := do(h, "alice", "GET", "/console/operators/refusals?id=req_bob", nil); !strings.Contains(w.Body.String(), "too many requests") ||
		!strings.Contains(w.Body.String(), "rate_limit_exceeded") {
		t.Errorf("the refusal's reason is not shown:\n%s", w.Body)
	}
	// A user sees their own refusals on the usage page, nobody else's.
	w := do(h, "bob", "GET", "/console/usage", nil)
	if got := rows(w.Body.String()); !strings.Contains(got, "req_bob") || strings.Contains(got, "req_carol") || strings.Contains(got, "req_anon") {
		t.Errorf("bob's usage page lists refusals %q", got)
	}
}

func TestSpendChartsTopUsersAndTheRest(t *testing.T) {
	f := newFake()
	h := newTestConsole(t, f)
	w := do(h, "alice", "GET", "/console/operators/spend", nil)
	if w.Code != http.StatusOK {
		t.Fatalf("%d %s", w.Code, w.Body)
	}
	var read []string
	for _, flt := range f.filters {
		if flt.User != "" {
			read = append(read, flt.User)
		}
	}
	if got := strings.Join(read, ","); got != "u1,u2,u3,u4,u5,u6,u7" {
		t.Errorf("read the days of %s, want the 7 top spenders", got)
	}
	body := w.Body.String()
	i := strings.Index(body, `id="spend-by-user-charts"`)
	if i < 0 {
		t.Fatal("no chart by user")
	}
	charts := body[i:]
	charts = charts[:strings.Index(charts, `id="spend-by-key"`)]
	for _, want := range []string{"> u1</li>", "> u7</li>", "> (other users)</li>"} {
		if !strings.Contains(charts, want) {
			t.Errorf("the user charts' legend lacks %q", want)
		}
	}
	if strings.Contains(charts, "> u8</li>") {
		t.Error("u8 has a series of its own")
	}
}
