package integration

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/caddy-air/caddy-air/internal/pgtest"
)

// TestRequestLogsPostgres: on PostgreSQL, the key's and the team's
// switches are kept, a logged request's log is stored under its ledger
// record's id (redacted), and a request of a key and team with logging
// off leaves none.
func TestRequestLogsPostgres(t *testing.T) {
	t.Setenv("AIR_TEST_RL_PG_DSN", pgtest.DSN(t))
	startGateway(t, gatewayOptions{Storage: "postgres {env.AIR_TEST_RL_PG_DSN}"})
	keyOn, idOn := createKey(t, "pg-logged")
	member, _ := createKey(t, "pg-member")
	off, _ := createKey(t, "pg-off")
	for _, step := range []struct{ method, path, body string }{
		{http.MethodPatch, "/air/keys/" + idOn, `{"log_requests":true}`},
		{http.MethodPost, "/air/teams", `{"name":"pgteam"}`},
		{http.MethodPut, "/air/teams/pgteam/members/pg-member", ``},
		{http.MethodPatch, "/air/teams/pgteam", `{"log_requests":true}`},
	} {
		if st := adminJSON(t, step.method, step.path, step.body, nil); st >= 300 {
			t.Fatalf("%s %s: %d", step.method, step.path, st)
		}
	}
	ids := map[string]string{}
	// The unlogged request first: logs are stored in order, so once the
	// later ones are there, its would be too.
	for _, r := range []struct{ name, key string }{{"off", off}, {"key", keyOn}, {"team", member}} {
		name, key := r.name, r.key
		st, hdr, body := call(t, http.MethodPost, "/v1/chat/completions", key, `{"model":"mock-gpt","messages":[{"role":"user","content":"pg-marker sk-proj-PGPLANTED0123456789"}]}`)
		if st != http.StatusOK {
			t.Fatalf("%s: %d %s", name, st, body)
		}
		ids[name] = hdr.Get("X-Request-Id")
	}
	for _, name := range []string{"key", "team"} {
		var l requestLog
		eventually(t, 10*time.Second, name+"'s log", func() bool {
			return adminJSON(t, http.MethodGet, "/air/request-logs/"+ids[name], "", &l) == http.StatusOK
		})
		if !strings.Contains(l.Request, "pg-marker [redacted]") || strings.Contains(l.Request, "PGPLANTED") || l.Response == "" {
			t.Errorf("%s's log: %+v", name, l)
		}
	}
	waitLedger(t, "pg-off", 1)
	if st := adminJSON(t, http.MethodGet, "/air/request-logs/"+ids["off"], "", nil); st != http.StatusNotFound {
		t.Errorf("a request with logging off: %d, want 404", st)
	}
}
