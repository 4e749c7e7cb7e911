package caddymodule

import (
	"bytes"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/caddy-air/caddy-air/billing"
)

// TestPrintRecordsShowsStatusAndLatency: caddy air ledger's table shows
// each record's status and how long it took, "-" when not measured.
func TestPrintRecordsShowsStatusAndLatency(t *testing.T) {
	at := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	page := &billing.RecordPage{Records: []billing.Record{
		{ID: "req_a", Time: at, User: "alice", KeyID: "key_1", Model: "m", Outcome: "ok", Status: 200, DurationMillis: 1834},
		{ID: "req_b", Time: at, User: "alice", KeyID: "key_1", Model: "m", Outcome: "upstream_error", Status: 502},
	}, HasMore: true, Next: "c1"}
	var out bytes.Buffer
	cmd := &cobra.Command{}
	cmd.SetOut(&out)
	printRecords(cmd, page)
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 4 || !strings.Contains(lines[0], "STATUS") || !strings.Contains(lines[0], "LATENCY") ||
		!strings.Contains(lines[1], " 200 ") || !strings.Contains(lines[1], " 1.834s ") ||
		!strings.Contains(lines[2], " 502 ") || !strings.Contains(lines[2], " - ") || lines[3] != "more: --after c1" {
		t.Errorf("printed:\n%s", out.String())
	}
}

// TestLedgerNewestFirstFlag: caddy air ledger --newest-first (or --desc)
// asks the admin API for order=desc, and without it for no order.
func TestLedgerNewestFirstFlag(t *testing.T) {
	for _, tc := range []struct {
		args  []string
		order string
	}{
		{[]string{"ledger", "--user", "alice"}, ""},
		{[]string{"ledger", "--user", "alice", "--newest-first"}, "desc"},
		{[]string{"ledger", "--desc"}, "desc"},
	} {
		var order []string
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			order = append(order, r.URL.Query().Get("order"))
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"records":[],"has_more":false}`))
		})
		if out, err := runAir(t, h, tc.args...); err != nil || len(order) != 1 || order[0] != tc.order {
			t.Errorf("air %s: asked order %q (%v, %s), want %q", strings.Join(tc.args, " "), order, err, out, tc.order)
		}
	}
}
