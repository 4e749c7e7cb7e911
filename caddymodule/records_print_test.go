package caddymodule

import (
	"net/http"
	"strings"
	"testing"
)

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
