package integration

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/shopspring/decimal"

	"github.com/caddy-air/caddy-air/mockprovider"
)

// pollFast makes the gateway poll background responses every 200 ms.
const pollFast = "responses {\n\t\t\tpoll_interval 200ms\n\t\t}"

// createBackground creates a background response with c that the mock
// keeps queued for delay.
func createBackground(t *testing.T, c openai.Client, model, input string, delay time.Duration) *responses.Response {
	t.Helper()
	r, err := c.Responses.New(context.Background(), responses.ResponseNewParams{
		Model:      model,
		Input:      responses.ResponseNewParamsInputUnion{OfString: openai.String(input)},
		Background: openai.Bool(true),
	}, option.WithJSONSet("mock_background_ms", delay.Milliseconds()))
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != "queued" {
		t.Fatalf("created %s with status %s, want queued", r.ID, r.Status)
	}
	return r
}

// upstreamUsage retrieves response id from the mock directly (not
// through the gateway) once it completed, for the usage the ledger must
// show.
func upstreamUsage(t *testing.T, mock openai.Client, id string) responses.ResponseUsage {
	t.Helper()
	var r *responses.Response
	eventually(t, 10*time.Second, "response "+id+" completes upstream", func() bool {
		var err error
		if r, err = mock.Responses.Get(context.Background(), id, responses.ResponseGetParams{}); err != nil {
			t.Fatal(err)
		}
		return r.Status == "completed"
	})
	if r.Usage.OutputTokens == 0 {
		t.Fatalf("completed upstream without usage: %+v", r.Usage)
	}
	return r.Usage
}

// mockClient talks to the mock provider of the in-process gateway.
func mockClient() openai.Client {
	return openai.NewClient(option.WithBaseURL(baseURL+"/mock/v1/"), option.WithAPIKey("mock-upstream-key"), option.WithMaxRetries(0))
}

// TestResponsesBackgroundPolled: a background response that no client
// ever retrieves is billed by the poller, once, at its exact cost; a
// retrieval after that bills nothing more.
func TestResponsesBackgroundPolled(t *testing.T) {
	startGateway(t, gatewayOptions{Prices: respPrices, Extra: pollFast})
	key, _ := createKey(t, "resp-polled")
	c := respClient(key)
	r := createBackground(t, c, "mock-gpt", "Bill me without asking", 700*time.Millisecond)
	if recs := ledgerOf(t, "resp-polled"); len(recs) != 0 {
		t.Fatalf("billed before completion: %+v", recs)
	}
	want := []expected{expect("mock-gpt", upstreamUsage(t, mockClient(), r.ID))}
	checkRecords(t, "resp-polled", want)
	rec := ledgerOf(t, "resp-polled")[0]
	if rec.Outcome != "ok" || rec.Provider != "mock" || rec.Model != "mock-gpt" {
		t.Fatalf("record %+v", rec)
	}
	// More polls' worth of time, then a retrieval: still one record.
	time.Sleep(time.Second)
	done, err := c.Responses.Get(context.Background(), r.ID, responses.ResponseGetParams{})
	if err != nil || done.Status != "completed" {
		t.Fatalf("retrieval after billing: %v %+v", err, done)
	}
	checkRecords(t, "resp-polled", want)
}

// TestResponsesBackgroundRetrievedFirst: the client's retrieval bills
// the response first; the poller, which runs meanwhile, adds nothing.
// Then many responses are retrieved while the poller polls them too:
// each still has exactly one record.
func TestResponsesBackgroundRetrievedFirst(t *testing.T) {
	startGateway(t, gatewayOptions{Prices: respPrices, Extra: "responses {\n\t\t\tpoll_interval 1s\n\t\t}"})
	key, _ := createKey(t, "resp-first")
	c := respClient(key)
	ctx := context.Background()
	r := createBackground(t, c, "mock-gpt", "I will ask myself", 0)
	done, err := c.Responses.Get(ctx, r.ID, responses.ResponseGetParams{})
	if err != nil || done.Status != "completed" {
		t.Fatalf("retrieval: %v %+v", err, done)
	}
	want := []expected{expect("mock-gpt", done.Usage)}
	checkRecords(t, "resp-first", want)
	time.Sleep(2500 * time.Millisecond) // the poller's first poll was due after 1 s
	checkRecords(t, "resp-first", want)

	// Races: clients retrieve while the poller polls.
	const n = 8
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range n {
		r := createBackground(t, c, "mock-reasoner", fmt.Sprintf("race %d", i), time.Duration(800+100*i)*time.Millisecond)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				got, err := c.Responses.Get(ctx, r.ID, responses.ResponseGetParams{})
				if err != nil {
					t.Error(err)
					return
				}
				if got.Status == "completed" {
					mu.Lock()
					want = append(want, expect("mock-reasoner", got.Usage))
					mu.Unlock()
					return
				}
				time.Sleep(time.Duration(150+50*i) * time.Millisecond)
			}
		}()
	}
	wg.Wait()
	checkRecords(t, "resp-first", want)
	time.Sleep(2 * time.Second)
	checkRecords(t, "resp-first", want)
}

// TestResponsesBackgroundSurviveKill kills the gateway process (SIGKILL)
// while its background responses run upstream, unretrieved, and starts it
// again on the same data dir: the restarted gateway polls them and bills
// each exactly once, at its exact cost; another restart bills nothing
// more. The upstream (the mock, served by this test process) lives on
// across the restarts, as a real provider would.
func TestResponsesBackgroundSurviveKill(t *testing.T) {
	upstream := httptest.NewServer(mockprovider.New(mockprovider.Config{APIKey: "ext-key"}))
	defer upstream.Close()
	dataDir := t.TempDir()
	cfg := quickstartConfig(t, dataDir, fmt.Sprintf(`		%s
		provider ext {
			protocol openai
			base_url %s/v1
			api_key ext-key
		}
		model ext-gpt ext`, pollFast, upstream.URL))
	withPrices(t, cfg, strings.ReplaceAll(respPrices, "mock-gpt", "ext-gpt"))
	p := startProcess(t, cfg, dataDir)
	key := lastLine(caddyCLI(t, "air", "key", "create", "--user", "bg-survivor", "--config", cfg))
	c := openai.NewClient(option.WithBaseURL(p.url("/v1/")), option.WithAPIKey(key), option.WithMaxRetries(0))
	mock := openai.NewClient(option.WithBaseURL(upstream.URL+"/v1/"), option.WithAPIKey("ext-key"), option.WithMaxRetries(0))

	// Two finish while the first process runs (it may or may not have
	// polled them before the kill), three only after the kill.
	var ids []string
	for i, delay := range []time.Duration{0, 100 * time.Millisecond, 3 * time.Second, 3 * time.Second, 4 * time.Second} {
		ids = append(ids, createBackground(t, c, "ext-gpt", fmt.Sprintf("survive %d", i), delay).ID)
	}
	time.Sleep(300 * time.Millisecond)
	p.sigkill()

	p = startProcess(t, cfg, dataDir)
	var want []string
	for _, id := range ids {
		e := expect("mock-gpt", upstreamUsage(t, mock, id))
		want = append(want, e.cost.String())
	}
	var recs []ledgerRecord
	eventually(t, 20*time.Second, "every background response billed after the restart", func() bool {
		recs = procLedger(t, "bg-survivor")
		return len(recs) >= len(ids)
	})
	// A clean restart bills nothing again.
	p.stop()
	p = startProcess(t, cfg, dataDir)
	time.Sleep(time.Second)
	recs = procLedger(t, "bg-survivor")
	if len(recs) != len(ids) {
		t.Fatalf("%d ledger records for %d background responses: %+v", len(recs), len(ids), recs)
	}
	seen := map[string]int{}
	var got []string
	for _, r := range recs {
		seen[r.ID]++
		if r.Outcome != "ok" || r.Source != "reported" || r.Endpoint != "responses" {
			t.Errorf("record %+v", r)
		}
		cost, err := decimal.NewFromString(r.Cost)
		if err != nil {
			t.Fatalf("record %s cost %q: %v", r.ID, r.Cost, err)
		}
		got = append(got, cost.String())
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("record %s written %d times", id, n)
		}
	}
	if !sameMultiset(got, want) {
		t.Errorf("costs %v, want %v", got, want)
	}
	p.stop()
}

// sameMultiset reports whether a and b hold the same decimal strings,
// in any order.
func sameMultiset(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	count := map[string]int{}
	for _, s := range a {
		count[s]++
	}
	for _, s := range b {
		count[s]--
	}
	for _, n := range count {
		if n != 0 {
			return false
		}
	}
	return true
}

// withPrices makes the process config at cfg (from quickstartConfig) use
// a price file with content prices.
func withPrices(t *testing.T, cfg, prices string) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "prices.json")
	if err := os.WriteFile(file, []byte(prices), 0o600); err != nil {
		t.Fatal(err)
	}
	text, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	changed := strings.Replace(string(text), "prices prices.example.json", "prices "+file, 1)
	if changed == string(text) {
		t.Fatal("Caddyfile.example has no `prices prices.example.json` line to replace")
	}
	if err := os.WriteFile(cfg, []byte(changed), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestResponsesBackgroundDeleted: a client that deletes its finished
// background response before anyone retrieved it (and before the
// poller's first poll) is billed for it all the same.
func TestResponsesBackgroundDeleted(t *testing.T) {
	startGateway(t, gatewayOptions{Prices: respPrices, Extra: "responses {\n\t\t\tpoll_interval 10m\n\t\t}"})
	key, _ := createKey(t, "resp-deleted")
	c := respClient(key)
	r := createBackground(t, c, "mock-gpt", "Delete me when done", 0)
	want := []expected{expect("mock-gpt", upstreamUsage(t, mockClient(), r.ID))}
	if err := c.Responses.Delete(context.Background(), r.ID); err != nil {
		t.Fatal(err)
	}
	checkRecords(t, "resp-deleted", want)
}
