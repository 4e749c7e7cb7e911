package main

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/caddy-air/caddy-air/mockprovider"
)

func TestParseChaosFaults(t *testing.T) {
	for i, tc := range []struct {
		spec  string
		n     int
		share string
		ok    bool
	}{
		{"429:0.1,500:0.1,reset:0.1", 3, "30 %", true},
		{"cut:1", 1, "100 %", true},
		{" hang:0.5 , slow:0.25", 2, "75 %", true},
		{"500", 0, "", false},
		{"teapot:0.1", 0, "", false},
		{"500:x", 0, "", false},
		{"500:0.6,reset:0.6", 0, "", false},
	} {
		faults, err := parseChaosFaults(tc.spec, time.Minute)
		if (err == nil) != tc.ok || len(faults) != tc.n {
			t.Errorf("Test %d: %q: %d faults, error %v", i, tc.spec, len(faults), err)
			continue
		}
		if tc.ok && (faultShare(tc.spec) != tc.share || faults[0].For != time.Minute) {
			t.Errorf("Test %d: share %s, for %v; want %s, 1m", i, faultShare(tc.spec), faults[0].For, tc.share)
		}
	}
}

// TestChaosRateKinds drives a mock whose every request fails one way and
// checks that the client-visible error is counted as that kind.
func TestChaosRateKinds(t *testing.T) {
	for i, tc := range []struct {
		spec, kind string
	}{
		{"", ""},
		{"429:1", "status 429"},
		{"500:1", "status 500"},
		{"reset:1", "connection reset"},
		{"cut:1", "stream broken: unexpected EOF"},
	} {
		var faults []mockprovider.Fault
		if tc.spec != "" {
			var err error
			if faults, err = parseChaosFaults(tc.spec, time.Minute); err != nil {
				t.Fatal(err)
			}
		}
		h := mockprovider.New(mockprovider.Config{APIKey: upstreamKey, Faults: faults})
		srv := httptest.NewServer(h)
		req := request{URL: srv.URL + "/v1/chat/completions", Key: upstreamKey, Body: chatBody(true, `"mock_chunks":8`), Stream: true}
		res := chaosRate(context.Background(), newClient(4), req, 200, 50*time.Millisecond, 4, 10*time.Second)
		srv.Close()
		h.Close()
		if tc.kind == "" {
			if res.OK != 10 || res.Errors() != 0 || len(res.TTFB) != 10 {
				t.Errorf("Test %d: healthy: %d ok, errors %s", i, res.OK, res.KindsString())
			}
			continue
		}
		if res.OK != 0 || res.Kinds[tc.kind] != 10 || !strings.Contains(res.KindsString(), tc.kind+" ×10") {
			t.Errorf("Test %d: %s: %d ok, errors %s; want 10 × %s", i, tc.spec, res.OK, res.KindsString(), tc.kind)
		}
	}
}

func TestStartError(t *testing.T) {
	log := "chaos-1: caddy exited during startup\n" +
		`{"level":"info","msg":"using config from file"}` + "\n" +
		`{"level":"error","msg":"adapting config using caddyfile: model: want <id|glob> <provider>"}` + "\n"
	if got := startError(log); got != "adapting config using caddyfile: model: want <id|glob> <provider>" {
		t.Errorf("startError = %q", got)
	}
	if got := startError("boom\nmore"); got != "boom" {
		t.Errorf("startError without a log = %q", got)
	}
}
