package caddymodule

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// runAir runs `caddy air args…` against an admin API served by h, and
// returns what it printed and its error.
func runAir(t *testing.T, h http.Handler, args ...string) (string, error) {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	cmd := &cobra.Command{Use: "air", SilenceUsage: true, SilenceErrors: true}
	airCommand(cmd)
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(append(args, "--address", strings.TrimPrefix(srv.URL, "http://")))
	cmd.SetContext(context.Background())
	err := cmd.Execute()
	return out.String(), err
}

// adminStub answers GET path with body and fails the test on any other
// request.
func adminStub(t *testing.T, answers map[string]string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, ok := answers[r.Method+" "+r.URL.Path]
		if !ok {
			t.Errorf("unexpected admin request %s %s", r.Method, r.URL)
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(body))
	})
}

func TestAirCommandTypoFails(t *testing.T) {
	for _, args := range [][]string{{"kyes", "list"}, {"keys", "lsit"}, {"budget", "sett"}} {
		out, err := runAir(t, adminStub(t, nil), args...)
		if err == nil || !strings.Contains(err.Error(), "unknown command") {
			t.Errorf("air %s: err %v, out %q: want an unknown-command error (a non-zero exit)", strings.Join(args, " "), err, out)
		}
	}
	if _, err := runAir(t, adminStub(t, nil), "kyes"); err == nil || !strings.Contains(err.Error(), `did you mean "keys"`) {
		t.Errorf("air kyes: %v, want a suggestion of keys", err)
	}
	if out, err := runAir(t, adminStub(t, nil)); err != nil || !strings.Contains(out, "Available Commands") {
		t.Errorf("air alone: %v, %q: want its help", err, out)
	}
}

func TestKeysListShowsLimits(t *testing.T) {
	h := adminStub(t, map[string]string{
		"GET /air/keys": `[{"id":"key_a","user":"alice","created_at":"2026-11-01T00:00:00Z","state":"active"},
			{"id":"key_b","user":"bob","created_at":"2026-11-01T00:00:00Z","state":"active"}]`,
		"GET /air/budgets/": `[{"scope":"user","id":"alice","limits":{"currency":"USD","total":"9"},"month":"2026-11","spend":[]},
			{"scope":"key","id":"key_a","limits":{"currency":"USD","total":"5.5","rpm":60,"max_parallel_requests":4},"month":"2026-11","spend":[]}]`,
	})
	out, err := runAir(t, h, "keys", "list")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || !strings.Contains(lines[0], "LIMIT") {
		t.Fatalf("listing:\n%s", out)
	}
	if !strings.Contains(lines[1], "5.50 USD total, 60 rpm, 4 parallel") {
		t.Errorf("key_a's line lacks its limit: %q", lines[1])
	}
	if strings.Contains(lines[2], "USD") || strings.Contains(lines[2], "9") {
		t.Errorf("key_b's line shows a limit it does not have (its user's?): %q", lines[2])
	}
}

func TestBudgetGetPrintsTable(t *testing.T) {
	status := `{"limits":{"currency":"USD","monthly":"2","tpm":1000},"month":"2026-11","spend":[{"currency":"USD","month":"0.25","total":"1.5","reserved":"0.01"}]}`
	h := adminStub(t, map[string]string{"GET /air/budgets/user/bob": status})
	out, err := runAir(t, h, "budget", "get", "--user", "bob")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out, "{") || !strings.Contains(out, "2.00 USD/month, 1000 tpm") || !strings.Contains(out, "0.25 in 2026-11, 1.50 in all, 0.01 reserved") {
		t.Errorf("budget get printed:\n%s", out)
	}
	out, err = runAir(t, h, "budget", "get", "--user", "bob", "--json")
	if err != nil || !strings.Contains(out, `"reserved": "0.010000000"`) {
		t.Errorf("budget get --json: %v\n%s", err, out)
	}
}
