package integration

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestRoutingStateSurvivesReload: an upstream's open breaker stays open
// across a forced reload of the same config through the admin API's
// /load, and across a reload that changes something else; a reload that
// changes the upstream's base URL makes it a new upstream, closed.
func TestRoutingStateSurvivesReload(t *testing.T) {
	opts := gatewayOptions{
		Site:      faultMock("mkeep", "fault 1 500"),
		Providers: faultProvider("pkeep", "openai", "mkeep", "retries 1\n\t\t\tmin_requests 2\n\t\t\tfail_duration 10m"),
		Models: `model fm-keep {
			lb_policy round_robin
			to pkeep xkeep
			to mock okkeep
		}`,
	}
	g := startGateway(t, opts)
	key, _ := createKey(t, "reload-state")
	eventually(t, 30*time.Second, "the failing upstream's breaker opens", func() bool {
		if status, _, body := call(t, http.MethodPost, "/v1/chat/completions", key, chatBody("fm-keep")); status != http.StatusOK {
			t.Fatalf("fm-keep: %d %s", status, body)
		}
		return upstreamOf(t, "pkeep/xkeep").Reason == "breaker_open"
	})
	opened := upstreamOf(t, "pkeep/xkeep")

	stillOpen := func(after string) {
		t.Helper()
		u := upstreamOf(t, "pkeep/xkeep")
		if u.Breaker != "open" || u.Reason != "breaker_open" || u.Until == nil || !u.Until.Equal(*opened.Until) {
			t.Errorf("after %s: %+v, want the breaker open until %s as before", after, u, opened.Until)
		}
	}

	// The same config, loaded again: Caddy skips an unchanged config
	// unless told to reload with Cache-Control: must-revalidate.
	resp, err := http.Get("http://" + adminAddr + "/config/")
	if err != nil {
		t.Fatal(err)
	}
	cfg, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	req, _ := http.NewRequest(http.MethodPost, "http://"+adminAddr+"/load", bytes.NewReader(cfg))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Cache-Control", "must-revalidate")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST /load: %d %s", resp.StatusCode, body)
	}
	stillOpen("a forced reload of the same config")

	// Another model added: the upstream is unchanged.
	changed := opts
	changed.Models += "\n\t\tmodel fm-other mock"
	g.reload(changed)
	stillOpen("a reload that added a model")
	for i := range 6 {
		if status, _, body := call(t, http.MethodPost, "/v1/chat/completions", key, chatBody("fm-keep")); status != http.StatusOK {
			t.Fatalf("request %d after the reloads: %d %s", i, status, body)
		}
	}
	stillOpen("requests after the reloads")

	// Another base URL: a new upstream, its breaker closed.
	moved := changed
	moved.Providers = strings.Replace(moved.Providers, "http://localhost:9080/mkeep", "http://127.0.0.1:9080/mkeep", 1)
	g.reload(moved)
	if u := upstreamOf(t, "pkeep/xkeep"); u.Breaker != "closed" || !u.Available || u.Attempts != 0 {
		t.Errorf("after its base URL changed: %+v, want a fresh upstream", u)
	}
}
