package caddymodule

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/caddy-air/caddy-air/admin"
	"github.com/caddy-air/caddy-air/audit"
	"github.com/caddy-air/caddy-air/keys"
	"github.com/caddy-air/caddy-air/store"
)

// auditTestState starts an app on a Badger store in a temporary
// directory as the running one, for the admin API, and returns its state.
func auditTestState(t *testing.T) (*App, *state) {
	t.Helper()
	st, err := openState(openBadger(t, t.TempDir()), 0, 0, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	app := &App{live: new(live)}
	app.live.state.Store(st)
	prev := running.Swap(app)
	t.Cleanup(func() {
		running.Store(prev)
		_ = st.close()
	})
	return app, st
}

// auditEntries returns every entry of the trail, newest first.
func auditEntries(t *testing.T, st *state) []store.AuditEntry {
	t.Helper()
	p, err := st.audit.List(context.Background(), audit.Query{})
	if err != nil {
		t.Fatal(err)
	}
	return p.Entries
}

// adminDo sends one request to the admin route that serves path, as the
// admin API would, from 192.0.2.9.
func adminDo(t *testing.T, method, path, body string, hdr http.Header) *httptest.ResponseRecorder {
	t.Helper()
	r := httptest.NewRequest(method, path, strings.NewReader(body))
	r.RemoteAddr = "192.0.2.9:4444"
	for k, v := range hdr {
		r.Header[k] = v
	}
	mux := http.NewServeMux()
	for _, rt := range (Admin{}).Routes() {
		mux.HandleFunc(rt.Pattern, func(w http.ResponseWriter, r *http.Request) {
			if err := rt.Handler.ServeHTTP(w, r); err != nil {
				w.WriteHeader(599) // an API error: the status does not matter here, only that it is not 2xx
			}
		})
	}
	w := httptest.NewRecorder()
	mux.ServeHTTP(w, r)
	return w
}

// TestAdminMutationsAudited enumerates every admin route: each change it
// makes writes exactly one audit entry with the admin API as the actor,
// and every other method on it (reads, refusals) writes none. A route
// missing from the table fails the test, so a new route cannot leave
// its changes out of the trail.
func TestAdminMutationsAudited(t *testing.T) {
	_, st := auditTestState(t)
	// The key the changes act on, made outside the admin API.
	_, k, err := st.keys.Create(context.Background(), keys.CreateOptions{User: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	type call struct {
		method, path, body string
		action, target     string // the entry it must write
	}
	// mutations lists, for each route pattern, the changes it can make,
	// in order; probe is a path of the route to try every other method on.
	routes := map[string]struct {
		probe     string
		mutations []call
	}{
		"/air/keys": {"/air/keys", []call{
			{"POST", "/air/keys", `{"user":"bob","name":"laptop"}`, "key.create", ""},
		}},
		"/air/keys/": {"/air/keys/" + k.ID, []call{
			{"PATCH", "/air/keys/" + k.ID, `{"name":"renamed"}`, "key.update", k.ID},
			{"PATCH", "/air/keys/" + k.ID, `{"log_requests":true}`, "key.update", k.ID},
			{"POST", "/air/keys/" + k.ID + "/regenerate", `{"grace":"1h"}`, "key.regenerate", k.ID},
			{"DELETE", "/air/keys/" + k.ID, ``, "key.revoke", k.ID},
		}},
		"/air/budgets/": {"/air/budgets/user/alice", []call{
			{"PUT", "/air/budgets/user/alice", `{"rpm":10}`, "budget.set", "alice"},
			{"POST", "/air/budgets/key/" + k.ID, `{"tpm":1000}`, "budget.set", k.ID},
			{"DELETE", "/air/budgets/user/alice", ``, "budget.delete", "alice"},
		}},
		"/air/teams": {"/air/teams", []call{
			{"POST", "/air/teams", `{"name":"red"}`, "team.create", "red"},
		}},
		"/air/teams/": {"/air/teams/red", []call{
			{"PUT", "/air/teams/red/models", `{"models":["gpt-*"]}`, "team.models", "red"},
			{"PATCH", "/air/teams/red", `{"log_requests":true}`, "team.log_requests", "red"},
			{"PUT", "/air/teams/red/limits", `{"rpm":5}`, "budget.set", "red"},
			{"PUT", "/air/teams/red/members/alice", ``, "team.member.add", "red"},
			{"PUT", "/air/teams/red/members/alice", `{"admin":true}`, "team.admin.grant", "red"},
			{"PUT", "/air/teams/red/members/alice", `{"admin":true}`, "team.member.update", "red"},
			{"PUT", "/air/teams/red/members/alice", `{"admin":false}`, "team.admin.revoke", "red"},
			{"DELETE", "/air/teams/red/members/alice", ``, "team.member.remove", "red"},
		}},
		"/air/health":        {"/air/health", nil},
		"/air/providers":     {"/air/providers", nil},
		"/air/prices":        {"/air/prices", nil},
		"/air/refusals":      {"/air/refusals", nil},
		"/air/audit":         {"/air/audit", nil},
		"/air/alerts":        {"/air/alerts", nil},
		"/air/request-logs/": {"/air/request-logs/req_x", nil},
		"/air/usage":         {"/air/usage", nil},
		"/air/users":         {"/air/users", nil},
		"/air/records":       {"/air/records", nil},
		"/air/ledger":        {"/air/ledger", nil},
	}
	for _, rt := range (Admin{}).Routes() {
		tc, ok := routes[rt.Pattern]
		if !ok {
			t.Errorf("admin route %s is not in this test's table: list the changes it makes, so that each is checked to write one audit entry", rt.Pattern)
			continue
		}
		for _, c := range tc.mutations {
			n := len(auditEntries(t, st))
			w := adminDo(t, c.method, c.path, c.body, nil)
			if w.Code/100 != 2 {
				t.Errorf("%s %s: status %d %s", c.method, c.path, w.Code, w.Body)
				continue
			}
			all := auditEntries(t, st)
			if len(all) != n+1 {
				t.Errorf("%s %s wrote %d audit entries, want 1", c.method, c.path, len(all)-n)
				continue
			}
			e := all[0]
			target := c.target
			if target == "" { // a new key: its id is in the answer
				var out struct{ ID string }
				_ = json.Unmarshal(w.Body.Bytes(), &out)
				target = out.ID
			}
			if e.Action != c.action || e.TargetID != target || e.Actor != "admin-api" || e.Via != "admin-api" || e.ClientIP != "192.0.2.9" {
				t.Errorf("%s %s: entry %+v, want %s of %s by admin-api from 192.0.2.9", c.method, c.path, e, c.action, target)
			}
		}
		for _, m := range []string{"POST", "PUT", "PATCH", "DELETE"} {
			if slicesHasMethod(tc.mutations, m, func(c call) string { return c.method }) {
				continue
			}
			n := len(auditEntries(t, st))
			w := adminDo(t, m, tc.probe, `{}`, nil)
			if got := len(auditEntries(t, st)) - n; got != 0 {
				t.Errorf("%s %s (status %d) wrote %d audit entries: list it among the route's changes", m, tc.probe, w.Code, got)
			}
			if w.Code/100 == 2 {
				t.Errorf("%s %s succeeded (%d) but is not in the table of changes", m, tc.probe, w.Code)
			}
		}
	}
}

// TestTeamAuditValues checks the values the trail keeps of team changes:
// the models and limits before and after, the member's role before and
// after a grant, and the member removed.
func TestTeamAuditValues(t *testing.T) {
	_, st := auditTestState(t)
	for _, c := range []struct{ method, path, body string }{
		{"POST", "/air/teams", `{"name":"blue","models":["a-*"]}`},
		{"PUT", "/air/teams/blue/models", `{"models":["b-*"]}`},
		{"PUT", "/air/teams/blue/limits", `{"rpm":3}`},
		{"PUT", "/air/teams/blue/limits", `{"rpm":4}`},
		{"PUT", "/air/teams/blue/members/erin", `{"admin":false}`},
		{"PUT", "/air/teams/blue/members/erin", `{"admin":true}`},
		{"DELETE", "/air/teams/blue/members/erin", ``},
	} {
		if w := adminDo(t, c.method, c.path, c.body, nil); w.Code/100 != 2 {
			t.Fatalf("%s %s: %d %s", c.method, c.path, w.Code, w.Body)
		}
	}
	// Refused changes write nothing.
	n := len(auditEntries(t, st))
	adminDo(t, "POST", "/air/teams", `{"name":"blue"}`, nil)
	adminDo(t, "DELETE", "/air/teams/blue/members/nobody", ``, nil)
	adminDo(t, "PUT", "/air/teams/ghost/members/erin", ``, nil)
	if got := len(auditEntries(t, st)); got != n {
		t.Errorf("refused team changes wrote %d entries", got-n)
	}
	want := []struct{ action, typ, before, after string }{
		{"team.member.remove", "team", `{"admin":true,"user":"erin"}`, ``},
		{"team.admin.grant", "team", `{"user":"erin"}`, `{"admin":true,"user":"erin"}`},
		{"team.member.add", "team", ``, `{"user":"erin"}`},
		{"budget.set", "team", `{"rpm":3}`, `{"rpm":4}`},
		{"budget.set", "team", ``, `{"rpm":3}`},
		{"team.models", "team", `{"models":["a-*"]}`, `{"models":["b-*"]}`},
		{"team.create", "team", ``, `"models":["a-*"]`},
	}
	all := auditEntries(t, st)
	if len(all) != len(want) {
		t.Fatalf("%d entries, want %d: %+v", len(all), len(want), all)
	}
	for i, w := range want {
		e := all[i]
		if e.Action != w.action || e.TargetType != w.typ || e.TargetID != "blue" ||
			!strings.Contains(string(e.Before), w.before) || (w.before == "") != (len(e.Before) == 0 || string(e.Before) == "null") ||
			!strings.Contains(string(e.After), w.after) || (w.after == "") != (len(e.After) == 0 || string(e.After) == "null") {
			t.Errorf("entry %d: %s %s/%s before %s after %s, want %s before %s after %s", i, e.Action, e.TargetType, e.TargetID, e.Before, e.After, w.action, w.before, w.after)
		}
	}
}

// slicesHasMethod reports whether one of cs has method m.
func slicesHasMethod[C any](cs []C, m string, method func(C) string) bool {
	for _, c := range cs {
		if method(c) == m {
			return true
		}
	}
	return false
}

// TestAdminAuditCLIActor checks that a change through `caddy air` is
// recorded as the CLI's, with the user it reported, and that GET
// /air/audit filters and exports it with the secret of a new key left
// out.
func TestAdminAuditCLIActor(t *testing.T) {
	auditTestState(t)
	w := adminDo(t, "POST", "/air/keys", `{"user":"carol"}`, admin.CLIHeaders())
	if w.Code != http.StatusCreated {
		t.Fatalf("creating a key: %d %s", w.Code, w.Body)
	}
	var created struct{ ID, Key string }
	if err := json.Unmarshal(w.Body.Bytes(), &created); err != nil || created.Key == "" {
		t.Fatalf("answer %s: %v", w.Body, err)
	}
	adminDo(t, "PUT", "/air/budgets/user/carol", `{"rpm":5}`, nil)
	w = adminDo(t, "GET", "/air/audit?actor=cli", "", nil)
	var page admin.AuditPage
	if err := json.Unmarshal(w.Body.Bytes(), &page); err != nil || len(page.Entries) != 1 {
		t.Fatalf("GET /air/audit?actor=cli: %s (%v)", w.Body, err)
	}
	e := page.Entries[0]
	if e.Via != "cli" || e.Action != "key.create" || e.TargetID != created.ID || e.Identity == "" {
		t.Errorf("the CLI's entry: %+v", e)
	}
	if !strings.Contains(string(e.After), `"user":"carol"`) {
		t.Errorf("after: %s", e.After)
	}
	for _, f := range []string{"csv", "jsonl"} {
		w = adminDo(t, "GET", "/air/audit?format="+f, "", nil)
		body := w.Body.String()
		if w.Code != 200 || strings.Count(body, "\n") < 2 || !strings.Contains(body, "budget.set") || !strings.Contains(body, created.ID) {
			t.Errorf("export %s: %d\n%s", f, w.Code, body)
		}
		if strings.Contains(body, created.Key) {
			t.Errorf("export %s holds the key's secret", f)
		}
	}
	for _, q := range []string{"limit=0", "before=x", "since=yesterday", "format=xml"} {
		if w := adminDo(t, "GET", "/air/audit?"+q, "", nil); w.Code/100 == 2 {
			t.Errorf("GET /air/audit?%s: %d, want refused", q, w.Code)
		}
	}
	w = adminDo(t, "GET", "/air/audit?limit=1", "", nil)
	_ = json.Unmarshal(w.Body.Bytes(), &page)
	if len(page.Entries) != 1 || page.Entries[0].Action != "budget.set" || page.Next == "" {
		t.Fatalf("first page of 1: %s", w.Body)
	}
	w = adminDo(t, "GET", "/air/audit?limit=1&before="+page.Next, "", nil)
	page = admin.AuditPage{}
	_ = json.Unmarshal(w.Body.Bytes(), &page)
	if len(page.Entries) != 1 || page.Entries[0].Action != "key.create" || page.Next != "" {
		t.Errorf("second page: %s", w.Body)
	}
}

// adminHandler serves the admin routes of caddy-air, as Caddy's admin
// server would.
func adminHandler() http.Handler {
	mux := http.NewServeMux()
	for _, rt := range (Admin{}).Routes() {
		mux.HandleFunc(rt.Pattern, func(w http.ResponseWriter, r *http.Request) {
			if err := rt.Handler.ServeHTTP(w, r); err != nil {
				http.Error(w, `{"error":"`+err.Error()+`"}`, http.StatusBadRequest)
			}
		})
	}
	return mux
}

// TestAuditCommand checks `caddy air audit`: a key made with `caddy air
// keys create` is listed as the CLI's change, filters narrow the list,
// and --csv exports it.
func TestAuditCommand(t *testing.T) {
	auditTestState(t)
	h := adminHandler()
	if _, err := runAir(t, h, "keys", "create", "--user", "dave"); err != nil {
		t.Fatal(err)
	}
	if _, err := runAir(t, h, "budget", "set", "--user", "dave", "--rpm", "3"); err != nil {
		t.Fatal(err)
	}
	out, err := runAir(t, h, "audit", "--actor", "cli", "--since", "1h")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "TIME") || !strings.Contains(lines[1], "budget.set") || !strings.Contains(lines[1], `{"rpm":3}`) ||
		!strings.Contains(lines[2], "key.create") || !strings.Contains(lines[2], "cli (") || !strings.Contains(lines[2], `"user":"dave"`) {
		t.Errorf("caddy air audit:\n%s", out)
	}
	out, err = runAir(t, h, "audit", "--action", "key.create", "--csv")
	if err != nil || !strings.HasPrefix(out, "time,actor,") || strings.Count(out, "\n") != 2 || strings.Contains(out, "budget.set") {
		t.Errorf("caddy air audit --csv: %v\n%s", err, out)
	}
	if out, err = runAir(t, h, "audit", "--since", "yesterday"); err == nil {
		t.Errorf("a bad --since was accepted:\n%s", out)
	}
}

// failingAudit is an audit store that refuses every write.
type failingAudit struct{ store.Audit }

func (failingAudit) Append(context.Context, store.AuditEntry) error {
	return errors.New("disk on fire")
}

// TestAuditFailureLogged checks what happens when the trail cannot be
// written: the change stands (the key works), the answer is the change's,
// and the failure is logged as an error naming the action.
func TestAuditFailureLogged(t *testing.T) {
	_, st := auditTestState(t)
	core, logs := observer.New(zap.ErrorLevel)
	st.log = zap.New(core)
	st.audit = audit.New(failingAudit{})
	w := adminDo(t, "POST", "/air/keys", `{"user":"frank"}`, nil)
	var created struct{ ID, Key string }
	if err := json.Unmarshal(w.Body.Bytes(), &created); w.Code != http.StatusCreated || err != nil {
		t.Fatalf("creating a key with the trail down: %d %s", w.Code, w.Body)
	}
	if k, err := st.keys.Authenticate(context.Background(), created.Key); err != nil || k.ID != created.ID {
		t.Errorf("the key made with the trail down: %v", err)
	}
	entries := logs.FilterMessage("the audit trail did not record a change").All()
	if len(entries) != 1 || entries[0].ContextMap()["action"] != "key.create" || !strings.Contains(fmt.Sprint(entries[0].ContextMap()["error"]), "disk on fire") {
		t.Errorf("logged: %+v", logs.All())
	}
}

// TestTeamCommandAudited checks that `caddy air team` changes are recorded
// as the CLI's: create, add --admin, limits with --models (two entries:
// the models, then the limits) and remove.
func TestTeamCommandAudited(t *testing.T) {
	auditTestState(t)
	h := adminHandler()
	for _, args := range [][]string{
		{"team", "create", "ops"},
		{"team", "add", "ops", "gina", "--admin"},
		{"team", "limits", "ops", "--rpm", "9", "--models", "gpt-*"},
		{"team", "remove", "ops", "gina"},
	} {
		if out, err := runAir(t, h, args...); err != nil {
			t.Fatalf("caddy air %v: %v\n%s", args, err, out)
		}
	}
	out, err := runAir(t, h, "audit", "--actor", "cli", "--target", "ops")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	want := []string{"team.member.remove", "budget.set", "team.models", "team.member.add", "team.create"}
	if len(lines) != len(want)+1 {
		t.Fatalf("caddy air audit --target ops:\n%s", out)
	}
	for i, w := range want {
		if !strings.Contains(lines[i+1], w) || !strings.Contains(lines[i+1], "cli (") {
			t.Errorf("line %d is not %s by the CLI: %s", i+1, w, lines[i+1])
		}
	}
	if !strings.Contains(lines[4], `"admin":true`) || !strings.Contains(lines[3], `"gpt-*"`) || !strings.Contains(lines[2], `{"rpm":9}`) {
		t.Errorf("caddy air audit --target ops:\n%s", out)
	}
}
