package console

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/caddy-air/caddy-air/tasks"
)

const testHost = "gw.example"

// newTestConsole returns a console over f, mounted at /console, with alice
// as its admin.
func newTestConsole(t *testing.T, f *fakeServices) *Handler {
	t.Helper()
	h, err := New(Config{Prefix: "/console", Admins: []string{"alice"}, CSRFKey: bytes.Repeat([]byte("k"), 32), Services: f.services()})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// do serves one request as user ("" is anonymous); form is posted as a
// form; header holds name/value pairs.
func do(h *Handler, user, method, path string, form url.Values, header ...string) *httptest.ResponseRecorder {
	var body *strings.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	} else {
		body = strings.NewReader("")
	}
	r := httptest.NewRequest(method, "http://"+testHost+path, body)
	if form != nil {
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for i := 0; i+1 < len(header); i += 2 {
		r.Header.Set(header[i], header[i+1])
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r, user)
	return w
}

// sameOrigin are the headers a browser sends on a same-origin form post.
var sameOrigin = []string{"Origin", "http://" + testHost, "Sec-Fetch-Site", "same-origin"}

// withToken returns form plus user's CSRF token.
func withToken(h *Handler, user string, form url.Values) url.Values {
	if form == nil {
		form = url.Values{}
	}
	form.Set("csrf_token", h.csrfToken(user))
	form.Set("form_token", h.formToken(user))
	return form
}

// follow serves the GET that the redirect w answers with, as a browser
// does: with the cookies w set whose path matches the location's (RFC
// 6265, 5.1.4).
func follow(t *testing.T, h *Handler, user string, w *httptest.ResponseRecorder) *httptest.ResponseRecorder {
	t.Helper()
	if w.Code != http.StatusSeeOther {
		t.Fatalf("status %d, want 303 See Other\n%s", w.Code, w.Body)
	}
	r := httptest.NewRequest("GET", "http://"+testHost+w.Header().Get("Location"), nil)
	for _, c := range w.Result().Cookies() {
		p := r.URL.Path
		if c.Path == "" || p == c.Path || strings.HasPrefix(p, c.Path) && (strings.HasSuffix(c.Path, "/") || p[len(c.Path)] == '/') {
			r.AddCookie(c)
		}
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r, user)
	return rec
}

func TestAnonymousGetsNothing(t *testing.T) {
	f := newFake()
	h := newTestConsole(t, f)
	_, _, _ = f.Create(t.Context(), "alice", NewKey{Name: "prod"})
	for i, tc := range []struct{ method, path string }{
		{"GET", "/console/keys"}, {"GET", "/console/usage"}, {"GET", "/console/tasks"}, {"GET", "/console/playground"},
		{"GET", "/console/operators"}, {"POST", "/console/keys"}, {"GET", "/console/"}, {"GET", "/console/operators/keys"},
		{"GET", "/console/signout"},
	} {
		w := do(h, "", tc.method, tc.path, nil, sameOrigin...)
		if w.Code != http.StatusUnauthorized {
			t.Errorf("Test %d: %s %s anonymous: status %d, want 401", i, tc.method, tc.path, w.Code)
		}
		if strings.Contains(w.Body.String(), "key_alice") || strings.Contains(w.Body.String(), "<table") {
			t.Errorf("Test %d: anonymous %s shows content: %s", i, tc.path, w.Body)
		}
		if w.Header().Get("X-Frame-Options") != "DENY" || w.Header().Get("Content-Security-Policy") == "" {
			t.Errorf("Test %d: security headers missing on a 401: %v", i, w.Header())
		}
		if b := w.Body.String(); !strings.Contains(b, `id="sign-in-needed"`) || strings.Contains(b, "<nav") {
			t.Errorf("Test %d: anonymous %s: want the sign-in page without navigation: %s", i, tc.path, b)
		}
	}
	// The styles and the icon of the sign-in page are public; a post is
	// not.
	for _, p := range []string{"/console/static/console.css", "/console/static/favicon.svg"} {
		if w := do(h, "", "GET", p, nil); w.Code != http.StatusOK {
			t.Errorf("anonymous GET %s: %d, want 200", p, w.Code)
		}
	}
	if w := do(h, "", "POST", "/console/static/console.css", nil, sameOrigin...); w.Code != http.StatusUnauthorized {
		t.Errorf("anonymous POST to a static file: %d, want 401", w.Code)
	}
	if len(f.keys) != 1 {
		t.Errorf("an anonymous post created a key: %d keys", len(f.keys))
	}
}

// inlineScript finds script elements without src and event handler
// attributes, which the Content-Security-Policy would block.
var inlineScript = regexp.MustCompile(`<script(?:\s[^>]*)?>[^<]|<script(?:(?:\s(?:type|defer|async)(?:="[^"]*")?)*)>|\son[a-z]+=|style="`)

func TestPagesAreStrict(t *testing.T) {
	f := newFake()
	h := newTestConsole(t, f)
	for i, path := range []string{"/console/keys", "/console/usage", "/console/tasks", "/console/playground", "/console/operators"} {
		w := do(h, "alice", "GET", path, nil)
		if w.Code != http.StatusOK {
			t.Fatalf("Test %d: GET %s: status %d: %s", i, path, w.Code, w.Body)
		}
		csp := w.Header().Get("Content-Security-Policy")
		for _, want := range []string{"script-src 'self'", "frame-ancestors 'none'", "default-src 'none'", "form-action 'self'"} {
			if !strings.Contains(csp, want) {
				t.Errorf("Test %d: %s: CSP %q lacks %q", i, path, csp, want)
			}
		}
		if strings.Contains(csp, "unsafe-inline") {
			t.Errorf("Test %d: CSP allows inline code: %q", i, csp)
		}
		if w.Header().Get("X-Frame-Options") != "DENY" {
			t.Errorf("Test %d: %s: X-Frame-Options %q", i, path, w.Header().Get("X-Frame-Options"))
		}
		if m := inlineScript.FindString(w.Body.String()); m != "" {
			t.Errorf("Test %d: %s has inline script or style: %q", i, path, m)
		}
	}
}

func TestOperatorsOnlyForAdmins(t *testing.T) {
	f := newFake()
	h := newTestConsole(t, f)
	if w := do(h, "bob", "GET", "/console/operators", nil); w.Code != http.StatusForbidden || strings.Contains(w.Body.String(), "user-list") {
		t.Errorf("bob sees the operators' page: %d", w.Code)
	}
	if w := do(h, "bob", "GET", "/console/keys", nil); strings.Contains(w.Body.String(), "/console/operators") {
		t.Error("bob's navigation links the operators' page")
	}
	form := withToken(h, "bob", url.Values{"user": {"bob"}, "monthly": {"1000"}})
	if w := do(h, "bob", "POST", "/console/operators/budgets", form, sameOrigin...); w.Code != http.StatusForbidden {
		t.Errorf("bob set a budget: status %d", w.Code)
	}
	if _, ok := f.budgets["bob"]; ok {
		t.Fatal("a plain user changed a budget")
	}
	w := do(h, "alice", "GET", "/console/operators", nil)
	if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), `data-user="bob"`) {
		t.Fatalf("alice's operators' page: %d %s", w.Code, w.Body)
	}
	form = withToken(h, "alice", url.Values{"user": {"bob"}, "monthly": {"0.000001"}, "rpm": {"5"}})
	if w := do(h, "alice", "POST", "/console/operators/budgets", form, sameOrigin...); w.Code != http.StatusSeeOther {
		t.Fatalf("alice setting a budget: status %d: %s", w.Code, w.Body)
	}
	if lim := f.budgets["bob"]; lim.Monthly != 1000 || lim.RPM != 5 {
		t.Errorf("bob's limits are %+v, want monthly 0.000001 (1000 nanos), rpm 5", lim)
	}
	w = do(h, "alice", "GET", "/console/operators", nil)
	for _, want := range []string{`data-scope="user" data-id="bob"`, `data-scope="key" data-id="key_limited"`, "0.0025 USD", "0.000001"} {
		if !strings.Contains(w.Body.String(), want) {
			t.Errorf("the operators' page lacks %q (budgets and the users' month)", want)
		}
	}
	form = withToken(h, "alice", url.Values{"user": {"bob"}, "monthly": {"abc"}})
	if w := do(h, "alice", "POST", "/console/operators/budgets", form, sameOrigin...); w.Code != http.StatusBadRequest {
		t.Errorf("a bad amount: status %d", w.Code)
	}
	form = withToken(h, "alice", url.Values{"user": {"bob"}})
	if w := do(h, "alice", "POST", "/console/operators/budgets/delete", form, sameOrigin...); w.Code != http.StatusSeeOther {
		t.Errorf("removing a budget: status %d", w.Code)
	}
	if _, ok := f.budgets["bob"]; ok {
		t.Error("bob's budget is still set")
	}
}

func TestUsersCannotReachOthersData(t *testing.T) {
	f := newFake()
	h := newTestConsole(t, f)
	_, aliceKey, _ := f.Create(t.Context(), "alice", NewKey{Name: "alice-prod"})
	_, bobKey, _ := f.Create(t.Context(), "bob", NewKey{Name: "bob-dev"})
	f.tasks = []*tasks.Task{
		{ID: "task_alice", User: "alice", Status: "running", CreatedAt: time.Now()},
		{ID: "task_bob", User: "bob", Status: "running", CreatedAt: time.Now()},
	}

	w := do(h, "bob", "GET", "/console/keys", nil)
	if !strings.Contains(w.Body.String(), bobKey.ID) || strings.Contains(w.Body.String(), aliceKey.ID) {
		t.Errorf("bob's key list: want %s and not %s:\n%s", bobKey.ID, aliceKey.ID, w.Body)
	}
	if w := do(h, "bob", "GET", "/console/keys/"+aliceKey.ID+"/revoke", nil); w.Code != http.StatusNotFound {
		t.Errorf("bob's confirmation page for alice's key: status %d", w.Code)
	}
	form := withToken(h, "bob", nil)
	if w := do(h, "bob", "POST", "/console/keys/"+aliceKey.ID+"/revoke", form, sameOrigin...); w.Code != http.StatusNotFound {
		t.Errorf("bob revoking alice's key: status %d", w.Code)
	}
	if f.revoked(aliceKey.ID) {
		t.Fatal("bob revoked alice's key")
	}
	if w := do(h, "bob", "POST", "/console/keys/"+bobKey.ID+"/revoke", form, sameOrigin...); w.Code != http.StatusSeeOther || !f.revoked(bobKey.ID) {
		t.Errorf("bob revoking his own key: status %d, revoked %v", w.Code, f.revoked(bobKey.ID))
	}

	w = do(h, "bob", "GET", "/console/usage?user=alice&key="+aliceKey.ID, nil)
	if w.Code != http.StatusOK {
		t.Fatalf("usage: %d", w.Code)
	}
	for _, flt := range f.filters {
		if flt.User != "bob" {
			t.Errorf("bob's usage page asked for user %q's report", flt.User)
		}
	}
	for _, q := range f.queries {
		if q.User != "bob" {
			t.Errorf("bob's usage page asked for user %q's ledger", q.User)
		}
	}
	if strings.Contains(w.Body.String(), "model-of-alice") || strings.Contains(w.Body.String(), "req_of_alice") {
		t.Error("bob's usage page shows alice's usage")
	}
	csv := do(h, "bob", "GET", "/console/usage.csv?user=alice", nil)
	if csv.Code != http.StatusOK || strings.Contains(csv.Body.String(), "alice") || !strings.Contains(csv.Body.String(), "req_of_bob") {
		t.Errorf("bob's CSV: %d %s", csv.Code, csv.Body)
	}
	for _, q := range f.exports {
		if q.User != "bob" {
			t.Errorf("bob's CSV asked for user %q's ledger", q.User)
		}
	}

	w = do(h, "bob", "GET", "/console/tasks", nil)
	if !strings.Contains(w.Body.String(), "task_bob") || strings.Contains(w.Body.String(), "task_alice") {
		t.Errorf("bob's tasks page: want task_bob only:\n%s", w.Body)
	}
	if w := do(h, "bob", "GET", "/console/tasks?after=task_alice", nil); w.Code != http.StatusBadRequest || strings.Contains(w.Body.String(), "task_") {
		t.Errorf("bob paging after alice's task: status %d\n%s", w.Code, w.Body)
	}
}

func TestCSRFRejected(t *testing.T) {
	f := newFake()
	h := newTestConsole(t, f)
	good := func() url.Values { return withToken(h, "bob", url.Values{"name": {"x"}}) }
	for i, tc := range []struct {
		name   string
		form   url.Values
		header []string
	}{
		{"missing token", url.Values{"name": {"x"}}, sameOrigin},
		{"bad token", url.Values{"name": {"x"}, "csrf_token": {"not-the-token"}}, sameOrigin},
		{"another user's token", withToken(h, "alice", url.Values{"name": {"x"}}), sameOrigin},
		{"cross-site Origin", good(), []string{"Origin", "https://evil.example"}},
		{"cross-site Sec-Fetch-Site", good(), []string{"Sec-Fetch-Site", "cross-site"}},
		{"same-site but other origin", good(), []string{"Sec-Fetch-Site", "same-site", "Origin", "http://sub." + testHost}},
	} {
		w := do(h, "bob", "POST", "/console/keys", tc.form, tc.header...)
		if w.Code != http.StatusForbidden {
			t.Errorf("Test %d (%s): status %d, want 403", i, tc.name, w.Code)
		}
	}
	if len(f.keys) != 0 {
		t.Fatalf("a refused request created %d keys", len(f.keys))
	}
	w := do(h, "bob", "POST", "/console/keys", good(), sameOrigin...)
	if w.Code != http.StatusSeeOther || len(f.keys) != 1 {
		t.Fatalf("a same-origin post with the token: status %d, %d keys", w.Code, len(f.keys))
	}
	// The playground's JSON post carries the token in a header.
	body := `{"model":"mock-gpt","messages":[{"role":"user","content":"hi"}]}`
	r := httptest.NewRequest("POST", "http://"+testHost+"/console/playground/chat", strings.NewReader(body))
	r.Header.Set("Sec-Fetch-Site", "same-origin")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r, "bob")
	if rec.Code != http.StatusForbidden || len(f.chats) != 0 {
		t.Errorf("a playground post without the token: status %d, %d chats", rec.Code, len(f.chats))
	}
}

func TestCreateKeyShowsSecretOnce(t *testing.T) {
	f := newFake()
	h := newTestConsole(t, f)
	form := withToken(h, "bob", url.Values{"name": {"laptop"}, "expires": {time.Now().AddDate(0, 1, 0).Format(dayLayout)}})
	post := do(h, "bob", "POST", "/console/keys", form, sameOrigin...)
	if strings.Contains(post.Body.String(), "sk-air-secret") {
		t.Errorf("the post's answer holds the secret (a refresh of it would post again):\n%s", post.Body)
	}
	w := follow(t, h, "bob", post)
	if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), "sk-air-secret-bob-1") || !strings.Contains(w.Body.String(), "“laptop”") {
		t.Fatalf("the page after creating a key: %d\n%s", w.Code, w.Body)
	}
	// A browser refresh of that page shows no secret (the cookie is
	// cleared) and mints nothing; a replay of the post mints nothing.
	for _, c := range w.Result().Cookies() {
		if c.Name == flashCookie && c.MaxAge >= 0 {
			t.Errorf("the page did not clear the secret's cookie: %+v", c)
		}
	}
	again := do(h, "bob", "POST", "/console/keys", form, sameOrigin...)
	if len(f.keys) != 1 || again.Code != http.StatusSeeOther || !strings.Contains(follow(t, h, "bob", again).Body.String(), "already sent") {
		t.Errorf("a replayed form: status %d, %d keys", again.Code, len(f.keys))
	}
	// The cookie is bound to its user and cannot be read by another.
	post2 := do(h, "bob", "POST", "/console/keys", withToken(h, "bob", url.Values{"name": {"second"}}), sameOrigin...)
	r := httptest.NewRequest("GET", "http://"+testHost+"/console/keys", nil)
	for _, c := range post2.Result().Cookies() {
		r.AddCookie(c)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r, "mallory")
	if strings.Contains(rec.Body.String(), "sk-air-secret") {
		t.Errorf("another user's page shows bob's new secret")
	}
	if len(f.keys) != 2 || f.keys[0].Name != "laptop" || f.keys[0].ExpiresAt == nil {
		t.Errorf("created key %+v, want name laptop and an expiry", f.keys[0])
	}
	if w := do(h, "bob", "GET", "/console/keys", nil); strings.Contains(w.Body.String(), "sk-air-secret") || !strings.Contains(w.Body.String(), "laptop") {
		t.Errorf("the key list shows the secret again, or not the key:\n%s", w.Body)
	}
	form = withToken(h, "bob", url.Values{"expires": {"2001-01-01"}})
	if w := do(h, "bob", "POST", "/console/keys", form, sameOrigin...); w.Code != http.StatusBadRequest || len(f.keys) != 2 {
		t.Errorf("an expiry in the past: status %d, %d keys", w.Code, len(f.keys))
	}
}

func TestUsagePageShowsReportFigures(t *testing.T) {
	f := newFake()
	h := newTestConsole(t, f)
	w := do(h, "bob", "GET", "/console/usage?since=2026-01-01&until=2026-01-31", nil)
	body := w.Body.String()
	if w.Code != http.StatusOK || !strings.Contains(body, "0.001234567 USD") || !strings.Contains(body, "<rect") {
		t.Fatalf("usage page: %d, want the exact cost and a chart:\n%s", w.Code, body)
	}
	if !strings.Contains(body, "+ unpriced web_search, audio_input</em>") {
		t.Errorf("usage page: a record's unpriced charges are not shown:\n%s", body)
	}
	flt := f.filters[len(f.filters)-1]
	if flt.Since.Format(dayLayout) != "2026-01-01" || flt.Until.Format(dayLayout) != "2026-01-31" {
		t.Errorf("report range %v..%v", flt.Since, flt.Until)
	}
	if f.reportCalls != 1 || len(f.filters) != 3 {
		t.Errorf("the usage page asked %d times for %d reports, want one read for its three", f.reportCalls, len(f.filters))
	}
	if w := do(h, "bob", "GET", "/console/usage?since=2026-02-01&until=2026-01-01", nil); w.Code != http.StatusBadRequest {
		t.Errorf("a reversed range: status %d", w.Code)
	}
}

func TestPlaygroundStreamsAndSettles(t *testing.T) {
	f := newFake()
	h := newTestConsole(t, f)
	body := `{"model":"mock-gpt","messages":[{"role":"user","content":"hi"}]}`
	r := httptest.NewRequest("POST", "http://"+testHost+"/console/playground/chat", strings.NewReader(body))
	r.Header.Set("Sec-Fetch-Site", "same-origin")
	r.Header.Set("X-CSRF-Token", h.csrfToken("bob"))
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r, "bob")
	out := w.Body.String()
	if w.Code != http.StatusOK || !strings.Contains(out, `"content":"hi"`) || !strings.Contains(out, "event: air.settled") || !strings.Contains(out, `"cost":"0.000000042"`) {
		t.Fatalf("playground: %d\n%s", w.Code, out)
	}
	if len(f.chats) != 1 || !strings.HasPrefix(f.chats[0], "bob ") || !strings.Contains(f.chats[0], `"stream":true`) {
		t.Errorf("chat calls: %q", f.chats)
	}
	r = httptest.NewRequest("POST", "http://"+testHost+"/console/playground/chat", strings.NewReader(`{"model":"other","messages":[{"role":"user","content":"hi"}]}`))
	r.Header.Set("X-CSRF-Token", h.csrfToken("bob"))
	w = httptest.NewRecorder()
	h.ServeHTTP(w, r, "bob")
	if w.Code != http.StatusBadRequest || len(f.chats) != 1 {
		t.Errorf("an unlisted model: status %d", w.Code)
	}
}

func TestTrimFloat(t *testing.T) {
	for i, tc := range []struct {
		in   float64
		want string
	}{{0, "0"}, {0.0000125, "0.0000125"}, {2.5e-05, "0.000025"}, {1.5, "1.5"}, {20, "20"}, {12345, "12300"}} {
		if got := trimFloat(tc.in); got != tc.want {
			t.Errorf("Test %d: trimFloat(%v) = %q, want %q", i, tc.in, got, tc.want)
		}
	}
}

func TestUsageRangeIsBounded(t *testing.T) {
	for _, tc := range []struct {
		name, since, until string
		want               int
	}{
		{"a leap year", "2024-01-01", "2024-12-31", http.StatusOK},
		{"a day more than a leap year", "2024-01-01", "2025-01-01", http.StatusBadRequest},
		{"every representable day", "0001-01-01", "9999-12-31", http.StatusBadRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake()
			h := newTestConsole(t, f)
			path := "/console/usage?since=" + tc.since + "&until=" + tc.until
			w := do(h, "bob", "GET", path, nil)
			if w.Code != tc.want {
				t.Fatalf("status %d, want %d", w.Code, tc.want)
			}
			if tc.want == http.StatusOK {
				return
			}
			if !strings.Contains(w.Body.String(), "longer than 366 days") {
				t.Errorf("the page does not say why:\n%s", w.Body.String())
			}
			if f.reportCalls != 0 {
				t.Errorf("a refused range read %d reports", f.reportCalls)
			}
			// Charting every day of the range allocated millions of
			// times; refusing it costs a page's rendering.
			if n := testing.AllocsPerRun(2, func() { do(h, "bob", "GET", path, nil) }); n > 5000 {
				t.Errorf("a refused range allocated %.0f times per request", n)
			}
		})
	}
}

func TestKeyNameBoundIsInCharacters(t *testing.T) {
	for _, tc := range []struct {
		name string
		want int
	}{
		{strings.Repeat("é", maxKeyName), http.StatusSeeOther},
		{strings.Repeat("n", maxKeyName+1), http.StatusBadRequest},
	} {
		f := newFake()
		h := newTestConsole(t, f)
		w := do(h, "bob", "POST", "/console/keys", withToken(h, "bob", url.Values{"name": {tc.name}}), sameOrigin...)
		if w.Code != tc.want {
			t.Errorf("a name of %d characters (%d bytes): status %d, want %d", len([]rune(tc.name)), len(tc.name), w.Code, tc.want)
		}
	}
}
