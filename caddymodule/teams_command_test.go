package caddymodule

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// teamAnswer is the admin API's answer about team search.
const teamAnswer = `{"name":"search","models":["gpt-*"],"created_at":"2026-11-28T00:00:00Z",
	"members":[{"user":"alice","admin":true},{"user":"bob"}],
	"budget":{"limits":{"total":"100"},"month":"2026-11","spend":[{"currency":"USD","month":"1.5","total":"2.5","reserved":"0"}]}}`

// TestTeamCommands checks what each `caddy air team` command asks the
// admin API (method, path and body) and that it prints the team.
func TestTeamCommands(t *testing.T) {
	for i, tc := range []struct {
		args []string
		want []string // "METHOD path body" of each request, in order
	}{
		{[]string{"team", "create", "search", "--models", "gpt-*"}, []string{`POST /air/teams {"name":"search","models":["gpt-*"]}`}},
		{[]string{"team", "add", "search", "alice", "--admin"}, []string{`PUT /air/teams/search/members/alice {"admin":true}`}},
		{[]string{"team", "add", "search", "bob"}, []string{`PUT /air/teams/search/members/bob {"admin":false}`}},
		{[]string{"team", "remove", "search", "bob"}, []string{`DELETE /air/teams/search/members/bob `}},
		{[]string{"team", "limits", "search", "--total", "100", "--rpm", "60"}, []string{`PUT /air/teams/search/limits {"total":"100.000000000","rpm":60}`}},
		{[]string{"team", "limits", "search", "--monthly", "5", "--models", "gpt-4o,claude-*"}, []string{
			`PUT /air/teams/search/models {"models":["gpt-4o","claude-*"]}`, `PUT /air/teams/search/limits {"monthly":"5.000000000"}`}},
		{[]string{"team", "list"}, []string{`GET /air/teams `}},
	} {
		var got []string
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			got = append(got, r.Method+" "+r.URL.Path+" "+string(body))
			w.Header().Set("Content-Type", "application/json")
			if r.URL.Path == "/air/teams" && r.Method == http.MethodGet {
				_, _ = w.Write([]byte("[" + teamAnswer + "]"))
				return
			}
			_, _ = w.Write([]byte(teamAnswer))
		})
		out, err := runAir(t, h, tc.args...)
		if err != nil || strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
			t.Errorf("Test %d: air %s: %v; sent\n%s\nwant\n%s", i, strings.Join(tc.args, " "), err, strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			continue
		}
		if !strings.Contains(out, "search") || !strings.Contains(out, "alice (admin), bob") || !strings.Contains(out, "gpt-*") {
			t.Errorf("Test %d: air %s printed %q", i, strings.Join(tc.args, " "), out)
		}
	}
}

// TestUsageByTeamAndTag checks that usage --by team|tag with --team and
// --tag asks the admin API for them and labels the rows.
func TestUsageByTeamAndTag(t *testing.T) {
	var query string
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		query = r.URL.RawQuery
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"rows":[{"tag":"","currency":"USD","priced":true,"requests":1,"cost":"1"},{"tag":"proj:x","currency":"USD","priced":true,"requests":2,"cost":"2"}],"totals":[{"currency":"USD","priced":true,"requests":3,"cost":"3"}]}`))
	})
	out, err := runAir(t, h, "usage", "--by", "tag", "--team", "search", "--tag", "proj:x")
	if err != nil || query != "by=tag&tag=proj%3Ax&team=search" {
		t.Fatalf("usage: %v, query %q", err, query)
	}
	if !strings.Contains(out, "TAG") || !strings.Contains(out, "(none)") || !strings.Contains(out, "proj:x") {
		t.Errorf("usage --by tag printed:\n%s", out)
	}
}
