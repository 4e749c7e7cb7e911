package console

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/caddy-air/caddy-air/billing"
)

// TestOperatorRoutesAccess tries every operators' route as an anonymous
// caller, a plain user and an admin, and every post without a token and
// from another site.
func TestOperatorRoutesAccess(t *testing.T) {
	routes := []struct {
		method, path string
		form         url.Values
		admin        int
	}{
		{"GET", "/console/operators", nil, http.StatusOK},
		{"GET", "/console/operators?scope=key&id=key_limited", nil, http.StatusOK},
		{"GET", "/console/operators/ledger", nil, http.StatusOK},
		{"GET", "/console/operators/ledger?user=bob&outcome=ok", nil, http.StatusOK},
		{"GET", "/console/operators/ledger.csv", nil, http.StatusOK},
		{"POST", "/console/operators/budgets", url.Values{"scope": {"key"}, "id": {"key_x"}, "rpm": {"7"}}, http.StatusSeeOther},
		{"POST", "/console/operators/budgets/delete", url.Values{"scope": {"key"}, "id": {"key_x"}}, http.StatusSeeOther},
		{"GET", "/console/operators/keys", nil, http.StatusOK},
		{"GET", "/console/operators/keys?q=bob&state=active", nil, http.StatusOK},
		{"POST", "/console/operators/keys", url.Values{"user": {"carol"}, "name": {"ci"}}, http.StatusSeeOther},
		{"GET", "/console/operators/keys/key_bob_1/revoke", nil, http.StatusOK},
		{"POST", "/console/operators/keys/key_bob_1/revoke", url.Values{}, http.StatusSeeOther},
		{"GET", "/console/operators/spend", nil, http.StatusOK},
		{"GET", "/console/operators/refusals?id=req_1", nil, http.StatusOK},
		{"GET", "/console/operators/keys/key_bob_1/edit", nil, http.StatusOK},
		{"POST", "/console/operators/keys/key_bob_1/edit", url.Values{"name": {"renamed"}}, http.StatusSeeOther},
	}
	for i, rt := range routes {
		f := newFake()
		h := newTestConsole(t, f)
		_, _, _ = f.Create(t.Context(), "bob", NewKey{Name: "bob's"})
		form := func(user string) url.Values {
			if rt.form == nil {
				return nil
			}
			v := url.Values{}
			for k, vs := range rt.form {
				v[k] = vs
			}
			return withToken(h, user, v)
		}
		if w := do(h, "", rt.method, rt.path, form("")); w.Code != http.StatusUnauthorized {
			t.Errorf("Test %d: %s %s anonymous: %d, want 401", i, rt.method, rt.path, w.Code)
		}
		w := do(h, "bob", rt.method, rt.path, form("bob"), sameOrigin...)
		if w.Code != http.StatusForbidden || strings.Contains(w.Body.String(), "req_search") || strings.Contains(w.Body.String(), "budget-list") {
			t.Errorf("Test %d: %s %s as bob: %d, want 403 and nothing shown", i, rt.method, rt.path, w.Code)
		}
		if len(f.searches) != 0 || len(f.exports) != 0 || len(f.budgets) != 0 || len(f.created) != 1 || f.revoked("key_bob_1") || f.keys[0].Name != "bob's" {
			t.Errorf("Test %d: bob reached the operators' services: %d searches, %d exports, budgets %v", i, len(f.searches), len(f.exports), f.budgets)
		}
		if rt.method == "POST" {
			if w := do(h, "alice", rt.method, rt.path, rt.form, sameOrigin...); w.Code != http.StatusForbidden {
				t.Errorf("Test %d: %s without a token: %d, want 403", i, rt.path, w.Code)
			}
			if w := do(h, "alice", rt.method, rt.path, form("bob"), sameOrigin...); w.Code != http.StatusForbidden {
				t.Errorf("Test %d: %s with bob's token: %d, want 403", i, rt.path, w.Code)
			}
			if w := do(h, "alice", rt.method, rt.path, form("alice"), "Origin", "https://evil.example", "Sec-Fetch-Site", "cross-site"); w.Code != http.StatusForbidden {
				t.Errorf("Test %d: %s from another site: %d, want 403", i, rt.path, w.Code)
			}
			if len(f.budgets) != 0 || len(f.created) != 1 || f.revoked("key_bob_1") || f.keys[0].Name != "bob's" {
				t.Errorf("Test %d: a refused post changed budgets or keys: %v, %d keys created", i, f.budgets, len(f.created))
			}
		}
		if w := do(h, "alice", rt.method, rt.path, form("alice"), sameOrigin...); w.Code != rt.admin {
			t.Errorf("Test %d: %s %s as alice: %d, want %d: %s", i, rt.method, rt.path, w.Code, rt.admin, w.Body)
		}
	}
}

func TestOperatorsSetChangeRemoveKeyLimits(t *testing.T) {
	f := newFake()
	h := newTestConsole(t, f)
	post := func(path string, form url.Values) int {
		return do(h, "alice", "POST", path, withToken(h, "alice", form), sameOrigin...).Code
	}
	if c := post("/console/operators/budgets", url.Values{"scope": {"key"}, "id": {"key_x"}, "rpm": {"7"}, "tpm": {"9000"}, "total": {"2.50"}, "max_parallel_requests": {"3"}}); c != http.StatusSeeOther {
		t.Fatalf("setting a key's rate limits: %d", c)
	}
	if lim := f.budgets["key:key_x"]; lim.RPM != 7 || lim.TPM != 9000 || lim.Total != 2_500_000_000 || lim.MaxParallel != 3 {
		t.Errorf("key_x's limits: %+v", lim)
	}
	// The page lists them and fills the form to change them.
	body := do(h, "alice", "GET", "/console/operators?scope=key&id=key_x", nil).Body.String()
	for _, want := range []string{`data-scope="key" data-id="key_x"`, `<td class="rpm">7</td>`, `<td class="tpm">9000</td>`, `<td class="parallel">3</td>`,
		`name="max_parallel_requests" inputmode="numeric" size="4" value="3"`, `name="rpm" inputmode="numeric" size="6" value="7"`, `name="total" inputmode="decimal" value="2.500000000"`, `<option value="key" selected>`} {
		if !strings.Contains(body, want) {
			t.Errorf("the operators' page lacks %q", want)
		}
	}
	if c := post("/console/operators/budgets", url.Values{"scope": {"key"}, "id": {"key_x"}, "rpm": {"20"}}); c != http.StatusSeeOther {
		t.Fatalf("changing a key's rate limit: %d", c)
	}
	if lim := f.budgets["key:key_x"]; lim.RPM != 20 || lim.TPM != 0 {
		t.Errorf("key_x's limits after the change: %+v", lim)
	}
	if c := post("/console/operators/budgets/delete", url.Values{"scope": {"key"}, "id": {"key_x"}}); c != http.StatusSeeOther {
		t.Fatalf("removing a key's limits: %d", c)
	}
	if _, ok := f.budgets["key:key_x"]; ok {
		t.Error("key_x keeps its limits after removal")
	}
	for i, tc := range []struct {
		form url.Values
		msg  string
	}{
		{url.Values{"scope": {"org"}, "id": {"x"}}, "the scope must be user, key or team"},
		{url.Values{"scope": {"key"}, "id": {""}}, "name the key whose limits to set"},
		{url.Values{"scope": {"user"}, "id": {"bob"}, "rpm": {"many"}}, "rpm: want a whole number"},
		{url.Values{"scope": {"user"}, "id": {"bob"}, "monthly": {"-3"}}, "monthly: want an amount"},
		{url.Values{"scope": {"user"}, "id": {"bob"}, "monthly": {"3"}, "currency": {"XXX"}}, "currency XXX is not in the price table"},
	} {
		w := do(h, "alice", "POST", "/console/operators/budgets", withToken(h, "alice", tc.form), sameOrigin...)
		if w.Code != http.StatusBadRequest || !strings.Contains(w.Body.String(), tc.msg) {
			t.Errorf("Test %d: %v: %d, want 400 with %q", i, tc.form, w.Code, tc.msg)
		}
	}
	if len(f.budgets) != 0 {
		t.Errorf("refused forms set budgets: %v", f.budgets)
	}
}

func TestOperatorsLedgerSearch(t *testing.T) {
	f := newFake()
	h := newTestConsole(t, f)
	w := do(h, "alice", "GET", "/console/operators/ledger?model=m&outcome=ok&since=2026-01-01&until=2026-01-31", nil)
	body := w.Body.String()
	if w.Code != http.StatusOK || !strings.Contains(body, `data-request-id="req_search_alice" data-user="alice"`) {
		t.Fatalf("search across users: %d\n%s", w.Code, body)
	}
	q := f.searches[0]
	if q.User != "" || q.Model != "m" || q.Outcome != "ok" || q.Since.Format(dayLayout) != "2026-01-01" || q.Until.Format(dayLayout) != "2026-02-01" || q.Limit != ledgerPageSize || !q.Desc {
		t.Errorf("search query: %+v", q)
	}
	next := submatch(body, `href="([^"]+)" rel="next" id="ledger-next"`)
	if !strings.Contains(next, "after=s1") || !strings.Contains(next, "model=m") {
		t.Fatalf("next page link %q", next)
	}
	// A page shorter than its size with more to come says why.
	if !strings.Contains(body, `id="ledger-partial"`) {
		t.Error("a short page with more to come does not say it is partial")
	}
	w = do(h, "alice", "GET", strings.ReplaceAll(next, "&amp;", "&"), nil)
	if !strings.Contains(w.Body.String(), `data-request-id="req_search_bob_2" data-user="bob"`) || strings.Contains(w.Body.String(), `id="ledger-next"`) ||
		strings.Contains(w.Body.String(), `id="ledger-partial"`) {
		t.Errorf("second page:\n%s", w.Body)
	}
	if w := do(h, "alice", "GET", "/console/operators/ledger?after=forged", nil); w.Code != http.StatusBadRequest {
		t.Errorf("a forged cursor: %d, want 400", w.Code)
	}
	if w := do(h, "alice", "GET", "/console/operators/ledger?since=yesterday", nil); w.Code != http.StatusBadRequest || !strings.Contains(w.Body.String(), "since must be a date") {
		t.Errorf("a bad date: %d", w.Code)
	}
	w = do(h, "alice", "GET", "/console/operators/ledger.csv?user=bob&key=key_b&after=s1", nil)
	if w.Code != http.StatusOK || w.Header().Get("Content-Type") != "text/csv; charset=utf-8" || !strings.Contains(w.Body.String(), "req_search_bob,bob") {
		t.Errorf("CSV: %d %v\n%s", w.Code, w.Header(), w.Body)
	}
	if e := f.exports[len(f.exports)-1]; e.User != "bob" || e.KeyID != "key_b" || e.After != "" {
		t.Errorf("CSV query: %+v (the whole search, not one page)", e)
	}
}

func TestOperatorsPricesAndProviders(t *testing.T) {
	f := newFake()
	h := newTestConsole(t, f)
	body := do(h, "alice", "GET", "/console/operators", nil).Body.String()
	for _, want := range []string{
		`data-model="mock-gpt"`, "≤ 32000: 2.5 / 10", "beyond: 5 / 20", "×1.25 / ×2 / ×0.1", "flex ×0.5", "audio in 40<br>web_search 0.01 per call",
		`data-model="mock-image"`, "0.04 per image", `data-provider="mock"`, "<code>mock-gpt</code> chat",
		"mock/gpt http://x key #0: available, breaker closed, 1/4 failed, 0 in flight",
		"mock/gpt http://y key #1: breaker_open, breaker open, 5/5 failed",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the operators' page lacks %q", want)
		}
	}
}

func TestKeysShowLimitsAndRefuseBadInput(t *testing.T) {
	f := newFake()
	h := newTestConsole(t, f)
	f.keys = append(f.keys, Key{ID: "key_lim", User: "bob", State: "active", Models: []string{"gpt-4o", "claude-*"},
		Limits: &billing.Limits{Total: 5_000_000_000, Currency: "USD", RPM: 10}})
	body := do(h, "bob", "GET", "/console/keys", nil).Body.String()
	for _, want := range []string{`<td class="models wide-only">gpt-4o, claude-*</td>`, `<td class="limit">5.00 USD, 10 rpm</td>`} {
		if !strings.Contains(body, want) {
			t.Errorf("the keys page lacks %q", want)
		}
	}
	for i, tc := range []struct {
		form url.Values
		msg  string
	}{
		{url.Values{"expires": {"next week"}}, "the expiry must be a date"},
		{url.Values{"expires": {"2001-01-01"}}, "the expiry must be today or later"},
		{url.Values{"name": {strings.Repeat("n", 101)}}, "longer than 100 characters"},
		{url.Values{"limit": {"-1"}}, "limit: must be more than zero"},
	} {
		w := do(h, "bob", "POST", "/console/keys", withToken(h, "bob", tc.form), sameOrigin...)
		if w.Code != http.StatusBadRequest || !strings.Contains(w.Body.String(), tc.msg) {
			t.Errorf("Test %d: creating a key with %v: %d, want 400 with %q", i, tc.form, w.Code, tc.msg)
		}
	}
}

func TestUsageChartsByModelAndKey(t *testing.T) {
	f := newFake()
	h := newTestConsole(t, f)
	body := do(h, "bob", "GET", "/console/usage", nil).Body.String()
	for _, want := range []string{`id="charts-by-model"`, `data-title="Cost per day by model (USD)"`, `data-title="Tokens per day by model"`,
		`id="charts-by-key"`, `data-title="Cost per day by key (USD)"`, `data-title="Tokens per day by key"`, "key-of-bob: 165 tokens"} {
		if !strings.Contains(body, want) {
			t.Errorf("the usage page lacks %q", want)
		}
	}
	var byDayKey bool
	for _, flt := range f.filters {
		byDayKey = byDayKey || flt.By == billing.ByDayKey && flt.User == "bob"
	}
	if !byDayKey {
		t.Errorf("the usage page read no report by day and key of bob: %+v", f.filters)
	}
}

// submatch returns the first group of pattern in s, or "".
func submatch(s, pattern string) string {
	m := regexp.MustCompile(pattern).FindStringSubmatch(s)
	if len(m) < 2 {
		return ""
	}
	return m[1]
}
