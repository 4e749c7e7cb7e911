package caddymodule

import (
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

// TestParseRequestLogs reads the request_logs block and refuses bad
// bounds and patterns at config load.
func TestParseRequestLogs(t *testing.T) {
	for i, tc := range []struct {
		in, err string
		cap     int
	}{
		{"request_logs {\n max_body 1KiB\n ttl 1h\n redact a+ b+\n}", "", 1024},
		{"request_logs", "", reqlogCap},
		{"request_logs {\n redact (\n}", "redact", 0},
		{"request_logs {\n max_body 17MiB\n}", "max_body", 0},
		{"request_logs {\n ttl 0s\n}", "ttl", 0},
		{"request_logs {\n colour red\n}", "unrecognized request_logs option", 0},
	} {
		a := &App{}
		d := caddyfile.NewTestDispenser(tc.in)
		d.Next()
		err := a.parseRequestLogs(d)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("Test %d: %v, want an error about %s", i, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("Test %d: %v", i, err)
		}
		b, err := a.RequestLogs.bounds()
		if err != nil || b.Cap != tc.cap {
			t.Errorf("Test %d: bounds %+v, %v; want cap %d", i, b, err, tc.cap)
		}
	}
}
