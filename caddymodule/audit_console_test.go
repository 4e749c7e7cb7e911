package caddymodule

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"net/http/httptest"
	"net/url"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/caddy-air/caddy-air/console"
)

// consoleCSRFKey is the console's CSRF key in these tests.
var consoleCSRFKey = []byte("0123456789abcdef0123456789abcdef")

// consoleCSRF is user's anti-CSRF token, as console.Handler computes it.
func consoleCSRF(user string) string {
	m := hmac.New(sha256.New, consoleCSRFKey)
	m.Write([]byte("air-console-csrf\x00"))
	m.Write([]byte(user))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// formToken matches a form's one-time token in a page.
var formToken = regexp.MustCompile(`name="form_token" value="([^"]+)"`)

// TestConsoleMutationsAudited checks that every change of the console's
// services writes one audit entry, and, through the console's forms
// (Console.ServeHTTP), that the entry names the signed-in user and the
// client's address. The services' methods are enumerated: a new method
// of console.KeyService, console.OperatorService, console.KeyRegenerator
// or console.TeamService (a team admin's changes) that is not in the
// table fails the test.
func TestConsoleMutationsAudited(t *testing.T) {
	app, st := auditTestState(t)
	svc := consoleServices{app: app}
	h, err := console.New(console.Config{Prefix: "/console", Admins: []string{"op"}, CSRFKey: consoleCSRFKey,
		Services: console.Services{Keys: svc, Operators: svc, Teams: consoleTeams(svc), Audit: svc}})
	if err != nil {
		t.Fatal(err)
	}
	c := &Console{UserHeader: "X-User", h: h}
	do := func(user, method, path string, form url.Values) *httptest.ResponseRecorder {
		t.Helper()
		var body string
		if form != nil {
			form.Set("csrf_token", consoleCSRF(user))
			body = form.Encode()
		}
		r := httptest.NewRequest(method, "http://gw.example"+path, strings.NewReader(body))
		r.RemoteAddr = "198.51.100.4:5555"
		r.Header.Set("X-User", user)
		if form != nil {
			r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		w := httptest.NewRecorder()
		_ = c.ServeHTTP(w, r, nil)
		return w
	}
	token := func(user, page string) string {
		t.Helper()
		m := formToken.FindStringSubmatch(do(user, "GET", page, nil).Body.String())
		if m == nil {
			t.Fatalf("no form token on %s", page)
		}
		return m[1]
	}
	// tina administers team red, made outside the trail; her forms
	// change it (methods of console.TeamService are named Team.<method>).
	if _, err := st.Teams.Create(context.Background(), "red", nil, time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := st.Teams.Add(context.Background(), "red", "tina", true); err != nil {
		t.Fatal(err)
	}
	newKeyID := func() string {
		all := auditEntries(t, st)
		return all[0].TargetID
	}
	var aliceKey, bobKey, umaKey string
	// forms are the console's mutating forms, in order; mutates is the
	// service method each calls.
	forms := []struct {
		user, path string
		form       func() url.Values
		action     string
		mutates    string
		after      func()
	}{
		{"alice", "/console/keys", func() url.Values {
			return url.Values{"name": {"mine"}, "form_token": {token("alice", "/console/keys")}}
		}, "key.create", "Create", func() { aliceKey = newKeyID() }},
		{"op", "/console/operators/keys", func() url.Values {
			return url.Values{"user": {"bob"}, "form_token": {token("op", "/console/operators/keys")}}
		}, "key.create", "CreateKeyFor", func() { bobKey = newKeyID() }},
		{"op", "", func() url.Values { return url.Values{"name": {"bob's"}, "models": {"gpt-*"}} }, "key.update", "UpdateKey", nil},
		{"op", "/console/operators/budgets", func() url.Values { return url.Values{"scope": {"user"}, "id": {"bob"}, "rpm": {"7"}} }, "budget.set", "SetBudget", nil},
		{"op", "/console/operators/budgets/delete", func() url.Values { return url.Values{"scope": {"user"}, "id": {"bob"}} }, "budget.delete", "DeleteBudget", nil},
		{"op", "", func() url.Values { return url.Values{"grace": {"1h"}} }, "key.regenerate", "RegenerateKey", nil},
		{"alice", "", func() url.Values { return url.Values{} }, "key.revoke", "Revoke", nil},
		{"op", "", func() url.Values { return url.Values{} }, "key.revoke", "RevokeKey", nil},
		{"tina", "/console/team/members", func() url.Values { return url.Values{"user": {"uma"}} }, "team.member.add", "Team.AddMember", nil},
		{"tina", "/console/team/members", func() url.Values { return url.Values{"user": {"uma"}, "admin": {"on"}} }, "team.admin.grant", "Team.AddMember", nil},
		{"tina", "/console/team/keys", func() url.Values {
			return url.Values{"user": {"uma"}, "name": {"uma's"}, "form_token": {token("tina", "/console/team")}}
		}, "key.create", "Team.CreateKey", func() { umaKey = newKeyID() }},
		{"tina", "", func() url.Values { return url.Values{} }, "key.revoke", "Team.RevokeKey", nil},
		{"tina", "/console/team/members/uma/remove", func() url.Values { return url.Values{} }, "team.member.remove", "Team.RemoveMember", nil},
	}
	called := map[string]bool{}
	for i, f := range forms {
		path := f.path
		switch f.mutates { // paths with the ids of keys made above
		case "RegenerateKey":
			path = "/console/operators/keys/" + bobKey + "/regenerate"
		case "UpdateKey":
			path = "/console/operators/keys/" + bobKey + "/edit"
		case "Revoke":
			path = "/console/keys/" + aliceKey + "/revoke"
		case "RevokeKey":
			path = "/console/operators/keys/" + bobKey + "/revoke"
		case "Team.RevokeKey":
			path = "/console/team/keys/" + umaKey + "/revoke"
		}
		form := f.form()
		n := len(auditEntries(t, st))
		w := do(f.user, "POST", path, form)
		if w.Code >= 400 {
			t.Fatalf("form %d, POST %s: %d %s", i, path, w.Code, w.Body)
		}
		all := auditEntries(t, st)
		if len(all) != n+1 {
			t.Fatalf("form %d, POST %s wrote %d audit entries, want 1", i, path, len(all)-n)
		}
		if e := all[0]; e.Action != f.action || e.Actor != f.user || e.Via != "console" || e.ClientIP != "198.51.100.4" {
			t.Errorf("form %d, POST %s: entry %+v, want %s by %s via the console from 198.51.100.4", i, path, e, f.action, f.user)
		}
		if f.after != nil {
			f.after()
		}
		called[f.mutates] = true
	}
	// The operators' audit page lists the changes, newest first, and
	// exports them; it is an operator's only.
	n := len(auditEntries(t, st))
	page := do("op", "GET", "/console/operators/audit?actor=op", nil)
	body := page.Body.String()
	if page.Code != 200 || strings.Count(body, `data-action="`) != 6 || !strings.Contains(body, `data-action="key.revoke" data-target="`+bobKey+`"`) ||
		strings.Index(body, "key.revoke") > strings.Index(body, "key.update") {
		t.Errorf("the audit page of op's changes: %d\n%s", page.Code, body)
	}
	if csv := do("op", "GET", "/console/operators/audit.csv?action=key.create", nil).Body.String(); strings.Count(csv, "\n") != 4 || !strings.Contains(csv, aliceKey) || !strings.Contains(csv, umaKey) {
		t.Errorf("the CSV export of key.create: %q", csv)
	}
	if w := do("alice", "GET", "/console/operators/audit", nil); w.Code != 403 && w.Code != 404 || strings.Contains(w.Body.String(), "key.create") {
		t.Errorf("alice's view of the audit page: %d", w.Code)
	}
	if w := do("op", "GET", "/console/operators/audit?before=junk", nil); w.Code != 400 {
		t.Errorf("a bad cursor: %d", w.Code)
	}
	if got := len(auditEntries(t, st)); got != n {
		t.Errorf("reading the trail wrote %d entries", got-n)
	}
	// Every method of the console's services is either a read or one of
	// the changes above.
	reads := map[string]bool{"List": true, "Budget": true, "Users": true, "Budgets": true, "SearchRecords": true,
		"ExportRecordsCSV": true, "AllKeys": true, "Refusals": true, "Prices": true, "Providers": true,
		"Team.AdminTeam": true, "Team.Teams": true}
	for _, it := range []reflect.Type{reflect.TypeFor[console.KeyService](), reflect.TypeFor[console.OperatorService](), reflect.TypeFor[console.KeyRegenerator](),
		reflect.TypeFor[console.TeamService]()} {
		prefix := ""
		if it == reflect.TypeFor[console.TeamService]() {
			prefix = "Team."
		}
		for m := range it.Methods() {
			if name := prefix + m.Name; !reads[name] && !called[name] {
				t.Errorf("%s.%s is neither a read nor a change this test makes through a form: add its form to the table", it.Name(), m.Name)
			}
		}
	}
}
