package integration

import (
	"encoding/json"
	"io"
	"net/http"
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
		seen := map[string]bool{}
		var cost billing.Amount
		var input int64
		for _, r := range recs {
			if seen[r.ID] {
				t.Errorf("%s: record %s twice", restart, r.ID)
			}
			seen[r.ID] = true
			c, err := billing.ParseAmount(r.Cost)
			if err != nil {
				t.Fatal(err)
			}
			cost += c
			input += r.Usage.Input
		}
		var rep struct {
			Totals []struct {
				Requests int64  `json:"requests"`
				Cost     string `json:"cost"`
				Usage    struct {
					Input int64 `json:"input_tokens"`
				} `json:"usage"`
			} `json:"totals"`
		}
		_, body := getStatus(t, "http://"+procAdminAddr+"/air/usage?user=crasher", "")
		if err := json.Unmarshal([]byte(body), &rep); err != nil || len(rep.Totals) != 1 {
			t.Fatalf("%s: usage report %v: %s", restart, err, body)
		}
		repCost, err := billing.ParseAmount(rep.Totals[0].Cost)
		if err != nil || rep.Totals[0].Requests != int64(len(recs)) || repCost != cost || rep.Totals[0].Usage.Input != input {
			t.Errorf("%s: the report says %d requests costing %s with %d input tokens; the ledger has %d costing %s with %d",
				restart, rep.Totals[0].Requests, rep.Totals[0].Cost, rep.Totals[0].Usage.Input, len(recs), cost, input)
		}
		if round == 0 {
			p.stop()
		}
	}
	t.Logf("%d sent, %d answered, %d a second before the kill", sent.Load(), answered.Load(), answeredEarly.Load())
}
