package integration

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caddy-air/caddy-air/billing"
)

// TestLedgerSurvivesKill sends chat requests from several clients, kills
// the gateway process (SIGKILL) while they run, starts it again on the same
// data dir and checks the ledger: every request answered well before the
// kill has its record, none has two, and the usage report adds up exactly
// to the records, after the kill and again after a clean restart.
func TestLedgerSurvivesKill(t *testing.T) {
	dataDir := t.TempDir()
	cfg := quickstartConfig(t, dataDir, "")
	p := startProcess(t, cfg, dataDir)
	key := lastLine(caddyCLI(t, "air", "key", "create", "--user", "crasher", "--config", cfg))

	const clients = 4
	start := time.Now()
	killAt := start.Add(2 * time.Second)
	settledBy := killAt.Add(-time.Second) // answers before this must be in the ledger
	var sent, answered, answeredEarly atomic.Int64
	var wg sync.WaitGroup
	client := &http.Client{Timeout: 5 * time.Second}
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(killAt.Add(200 * time.Millisecond)) {
				body := `{"model":"mock-gpt","messages":[{"role":"user","content":"bill me"}]}`
				if c%2 == 1 {
					body = `{"model":"mock-gpt","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"bill me"}]}`
				}
				req, _ := http.NewRequest(http.MethodPost, p.url("/v1/chat/completions"), strings.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+key)
				req.Header.Set("Content-Type", "application/json")
				sent.Add(1)
				resp, err := client.Do(req)
				if err != nil {
					continue // the gateway is gone
				}
				b := new(strings.Builder)
				_, err = io.Copy(b, resp.Body)
				resp.Body.Close()
				if err == nil && resp.StatusCode == http.StatusOK && (c%2 == 0 || strings.HasSuffix(strings.TrimSpace(b.String()), "data: [DONE]")) {
					answered.Add(1)
					if time.Now().Before(settledBy) {
						answeredEarly.Add(1)
					}
				}
			}
		}()
	}
	time.Sleep(time.Until(killAt))
	p.kill()
	wg.Wait()
	if answeredEarly.Load() < 20 {
		t.Fatalf("only %d requests answered before the kill: the test did not load the gateway", answeredEarly.Load())
	}

	for round, restart := range []string{"after the kill", "after a clean restart"} {
		p = startProcess(t, cfg, dataDir)
		recs := procLedger(t, "crasher")
		if n := int64(len(recs)); n < answeredEarly.Load() || n > sent.Load() {
			t.Errorf("%s: %d ledger records; %d requests answered a second before the kill, %d sent", restart, n, answeredEarly.Load(), sent.Load())
		}
		checkLedgerSums(t, "crasher", restart, recs)
		if round == 0 {
			p.stop()
		}
	}
	t.Logf("%d sent, %d answered, %d a second before the kill", sent.Load(), answered.Load(), answeredEarly.Load())
}

// checkLedgerSums checks that no record of recs, the ledger of user, appears
// twice and that the usage report of user (GET /air/usage) adds up exactly
// to the records: requests, cost and tokens. when names the moment in
// messages.
func checkLedgerSums(t *testing.T, user, when string, recs []ledgerRecord) {
	t.Helper()
	seen := map[string]bool{}
	var cost billing.Amount
	var input, output, cacheCreation, cacheRead int64
	for _, r := range recs {
		if seen[r.ID] {
			t.Errorf("%s: record %s twice", when, r.ID)
		}
		seen[r.ID] = true
		c, err := billing.ParseAmount(r.Cost)
		if err != nil {
			t.Fatal(err)
		}
		cost += c
		input += r.Usage.Input
		output += r.Usage.Output
		cacheCreation += r.Usage.CacheCreation
		cacheRead += r.Usage.CacheRead
	}
	var rep struct {
		Totals []struct {
			Requests int64  `json:"requests"`
			Cost     string `json:"cost"`
			Usage    struct {
				Input         int64 `json:"input_tokens"`
				CacheCreation int64 `json:"cache_creation_tokens"`
				CacheRead     int64 `json:"cache_read_tokens"`
				Output        int64 `json:"output_tokens"`
			} `json:"usage"`
		} `json:"totals"`
	}
	_, body := getStatus(t, "http://"+procAdminAddr+"/air/usage?user="+url.QueryEscape(user), "")
	if err := json.Unmarshal([]byte(body), &rep); err != nil || len(rep.Totals) == 0 {
		t.Fatalf("%s: usage report %v: %s", when, err, body)
	}
	// One total per currency: a record counts in exactly one, so the sums
	// over all of them must equal the ledger's.
	var requests, repInput, repOutput, repCreation, repRead int64
	var repCost billing.Amount
	for _, tot := range rep.Totals {
		c, err := billing.ParseAmount(tot.Cost)
		if err != nil {
			t.Fatalf("%s: usage report cost %q: %v", when, tot.Cost, err)
		}
		repCost += c
		requests += tot.Requests
		repInput += tot.Usage.Input
		repOutput += tot.Usage.Output
		repCreation += tot.Usage.CacheCreation
		repRead += tot.Usage.CacheRead
	}
	if requests != int64(len(recs)) || repCost != cost || repInput != input || repOutput != output ||
		repCreation != cacheCreation || repRead != cacheRead {
		t.Errorf("%s: the report says %d requests costing %s with %d input, %d output, %d cache creation, %d cache read tokens; "+
			"the ledger has %d costing %s with %d, %d, %d, %d",
			when, requests, repCost, repInput, repOutput, repCreation, repRead,
			len(recs), cost, input, output, cacheCreation, cacheRead)
	}
}
