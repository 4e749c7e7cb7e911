package integration

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptrace"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// bareConfig is bare Caddy in the shape of Caddyfile.example: the same
// global options and mock provider, and `reverse_proxy` to the mock in
// place of the air handlers. Its clients send the mock's key themselves.
const bareConfig = `{
	admin ` + procAdminAddr + `
	grace_period 10s
}

http://:` + procHTTPPort + ` {
	bind localhost
	handle_path /mock/* {
		air_mock {
			api_key mock-upstream-key
		}
	}
	handle /v1/* {
		rewrite * /mock{uri}
		reverse_proxy localhost:` + procHTTPPort + `
	}
	log
}
`

// reloadLoad is what clients saw during one run of load and reloads.
type reloadLoad struct {
	requests, failures int64
	// reused counts the failures on a connection that had served a
	// request before (a kept-alive one).
	reused int64
	// kinds counts the failures by kind: a status, or the error text.
	kinds map[string]int
}

func (l *reloadLoad) String() string {
	var ks []string
	for k, n := range l.kinds {
		ks = append(ks, fmt.Sprintf("%d× %s", n, k))
	}
	sort.Strings(ks)
	return fmt.Sprintf("%d of %d requests failed, %d of them on a reused connection (%s)", l.failures, l.requests, l.reused, strings.Join(ks, "; "))
}

// TestFaultReload sends chat requests from 8 keep-alive clients for about
// 10 s while `caddy reload` runs every second, once against caddy-air and
// once against bare Caddy (`reverse_proxy` to the same mock, from the same
// binary), and counts what clients see fail: transport errors and 5xx.
// caddy-air may fail no more than bare Caddy plus reloadSlack: a reload
// closes the old server's idle keep-alive connections, and a POST
// that a client sends on one at that moment fails in both, since clients
// do not retry requests that are not idempotent.
func TestFaultReload(t *testing.T) {
	rounds := faultRounds(1, 3)
	total := map[string]*reloadLoad{"air": {kinds: map[string]int{}}, "bare": {kinds: map[string]int{}}}
	reportFault(t, "reload: failed requests, caddy-air vs bare Caddy", "air ≤ bare + max(2, 25%) + 2√bare", func() string {
		a, b := total["air"], total["bare"]
		return fmt.Sprintf("air %d of %d, bare %d of %d (%d reloads each)", a.failures, a.requests, b.failures, b.requests, rounds*reloadsPerRun)
	})
	for round := range rounds {
		order := []string{"air", "bare"}
		if round%2 == 1 {
			order[0], order[1] = order[1], order[0]
		}
		for _, target := range order {
			l := reloadRun(t, target)
			t.Logf("round %d, %s: %s", round+1, target, l)
			sum := total[target]
			sum.requests += l.requests
			sum.failures += l.failures
			sum.reused += l.reused
			for k, n := range l.kinds {
				sum.kinds[k] += n
			}
		}
	}
	air, bare := total["air"], total["bare"]
	t.Logf("caddy-air: %s", air)
	t.Logf("bare Caddy: %s", bare)
	for name, l := range total {
		if l.requests < 100 {
			t.Errorf("%s: only %d requests: the test did not load it", name, l.requests)
		}
	}
	if slack := reloadSlack(bare.failures); air.failures > bare.failures+slack {
		t.Errorf("caddy-air failed %d requests across reloads, bare Caddy %d: more than %d over", air.failures, bare.failures, slack)
	}
}

// reloadSlack is how many more failures than bare Caddy's caddy-air may
// have: 25% of bare's, at least 2, plus two standard deviations of bare's
// count (failures are rare events, about Poisson: √n). Which requests meet
// a closing connection is chance, and bare Caddy's count varies by a
// third between runs; a caddy-air bug such as refusing requests while the
// old config stops would fail every request of that window, at thousands
// of requests a second.
func reloadSlack(bare int64) int64 {
	return max(2, bare/4) + int64(2*math.Sqrt(float64(bare)))
}

// reloadsPerRun is how many times reloadRun reloads its process.
const reloadsPerRun = 8

// reloadRun starts target ("air" or "bare") as a process, loads it while
// reloading it every second, and stops it.
func reloadRun(t *testing.T, target string) *reloadLoad {
	t.Helper()
	const clients = 8
	dataDir := t.TempDir()
	var p *process
	var cfg, key, body string
	switch target {
	case "air":
		cfg = quickstartConfig(t, dataDir, "")
		p = startProcess(t, cfg, dataDir)
		key = procCreateKey(t, "reloader")
		body = `{"model":"mock-gpt","messages":[{"role":"user","content":"reload me"}]}`
	default:
		cfg = filepath.Join(dataDir, "Caddyfile")
		if err := os.WriteFile(cfg, []byte(bareConfig), 0o600); err != nil {
			t.Fatal(err)
		}
		p = startProcessReady(t, cfg, dataDir, "/v1/chat/completions", http.StatusUnauthorized)
		key = "mock-upstream-key"
		body = `{"model":"mock-gpt","messages":[{"role":"user","content":"reload me"}]}`
	}
	defer p.stop()

	tr := &http.Transport{MaxIdleConns: clients, MaxIdleConnsPerHost: clients, IdleConnTimeout: time.Minute}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	l := &reloadLoad{kinds: map[string]int{}}
	var mu sync.Mutex
	fail := func(kind string, reused bool) {
		mu.Lock()
		defer mu.Unlock()
		l.failures++
		l.kinds[kind]++
		if reused {
			l.reused++
		}
	}
	var requests atomic.Int64
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				requests.Add(1)
				status, reused, err := reloadPost(client, p.url("/v1/chat/completions"), key, body)
				switch {
				case err != nil:
					fail(errorKind(err), reused)
				case status != http.StatusOK:
					fail(fmt.Sprintf("status %d", status), reused)
				}
			}
		}()
	}
	time.Sleep(time.Second)
	for range reloadsPerRun {
		caddyCLI(t, "reload", "--config", cfg, "--adapter", "caddyfile", "--force")
		time.Sleep(time.Second)
	}
	cancel()
	wg.Wait()
	if !p.running() {
		t.Errorf("%s: the process exited during the reloads", target)
	}
	l.requests = requests.Load()
	return l
}

// reloadPost posts body and reads the answer. It reports the status and
// whether the request went out on a connection that had been used before.
func reloadPost(client *http.Client, url, key, body string) (int, bool, error) {
	var reused bool
	trace := &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) { reused = i.Reused }}
	req, err := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), trace), http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return 0, false, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := client.Do(req)
	if err != nil {
		return 0, reused, err
	}
	defer resp.Body.Close()
	_, err = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, reused, err
}

// errorKind names a transport error for the failure counts.
func errorKind(err error) string {
	switch s := err.Error(); {
	case errors.Is(err, io.EOF) || strings.HasSuffix(s, ": EOF"):
		return "EOF"
	case strings.Contains(s, "connection reset"):
		return "connection reset"
	case strings.Contains(s, "connection refused"):
		return "connection refused"
	case strings.Contains(s, "broken pipe"):
		return "broken pipe"
	default:
		return s
	}
}
