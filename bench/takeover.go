package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// takeoverStreams is how many streams a victim of the takeover
// measurement has in flight when it is killed.
const takeoverStreams = 20

// takeoverRun is one round of the takeover measurement: how long after a
// kill -9 the victim's in-flight requests were all recorded interrupted
// by the surviving instances, and how many were.
type takeoverRun struct {
	Took     time.Duration
	Recorded int
}

// measureTakeover runs o.takeover rounds of: start one more caddy-air
// instance on the cluster (storage), open takeoverStreams slow streams
// through it, kill -9 it once every stream has its headers (so that every
// intent is committed), and poll the ledger through survivor's admin API
// until every stream is recorded interrupted.
func (b *bench) measureTakeover(ctx context.Context, tmp string, upPort int, storage, key string, survivor *caddyProcess) ([]takeoverRun, error) {
	var out []takeoverRun
	base, err := countInterrupted(ctx, survivor)
	if err != nil {
		return nil, err
	}
	for i := range b.opts.takeover {
		victim, err := newAirProcess(b.opts.caddyBin, tmp, fmt.Sprintf("air-pg-victim-%d", i+1), upPort, storage, b.opts.airOptions)
		if err != nil {
			return nil, err
		}
		if err := victim.Start(ctx); err != nil {
			return nil, err
		}
		// Streams of 10 minutes: the kill ends them, not the mock.
		body := chatBody(true, `"mock_chunks":6000,"mock_chunk_delay_ms":100`)
		req := request{URL: victim.URL("/v1/chat/completions"), Key: key, Body: body, Stream: true}
		client := newClient(takeoverStreams)
		var opened atomic.Int64
		all := make(chan struct{})
		sctx, cancel := context.WithCancel(ctx)
		var wg sync.WaitGroup
		for range takeoverStreams {
			wg.Go(func() {
				_, _ = do(sctx, client, req, func() {
					if opened.Add(1) == takeoverStreams {
						close(all)
					}
				})
			})
		}
		select {
		case <-all:
		case <-time.After(30 * time.Second):
			cancel()
			victim.Stop()
			return nil, fmt.Errorf("takeover round %d: %d of %d streams opened in 30 s", i+1, opened.Load(), takeoverStreams)
		}
		time.Sleep(200 * time.Millisecond) // a few events each
		_ = victim.cmd.Process.Kill()
		killed := time.Now()
		<-victim.exited
		victim.cmd = nil
		cancel()
		wg.Wait()
		client.CloseIdleConnections()
		var r takeoverRun
		for {
			n, err := countInterrupted(ctx, survivor)
			if err != nil {
				return nil, err
			}
			if r.Recorded = n - base; r.Recorded >= takeoverStreams {
				r.Took = time.Since(killed)
				base = n
				break
			}
			if time.Since(killed) > 2*time.Minute {
				return nil, fmt.Errorf("takeover round %d: %d of %d streams recorded interrupted 2 minutes after the kill", i+1, r.Recorded, takeoverStreams)
			}
			time.Sleep(100 * time.Millisecond)
		}
		b.logf("takeover round %d: %d in-flight streams of a killed instance recorded interrupted %.1f s after the kill", i+1, r.Recorded, r.Took.Seconds())
		out = append(out, r)
	}
	return out, nil
}

// countInterrupted returns how many of the bench user's records are
// interrupted, as p's admin API lists them.
func countInterrupted(ctx context.Context, p *caddyProcess) (int, error) {
	n, after := 0, ""
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.AdminURL("/air/records?user=bench&outcome=interrupted&limit=1000&after="+after), nil)
		if err != nil {
			return 0, err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return 0, err
		}
		if resp.StatusCode != http.StatusOK {
			return 0, fmt.Errorf("GET /air/records: %s: %.200s", resp.Status, body)
		}
		var page struct {
			Records []json.RawMessage `json:"records"`
			HasMore bool              `json:"has_more"`
			Next    string            `json:"next"`
		}
		if err := json.Unmarshal(body, &page); err != nil {
			return 0, fmt.Errorf("GET /air/records: %v", err)
		}
		n += len(page.Records)
		if !page.HasMore || page.Next == "" {
			return n, nil
		}
		after = page.Next
	}
}

// takeoverReport describes the takeover rounds.
func takeoverReport(runs []takeoverRun, instances int) string {
	if len(runs) == 0 {
		return ""
	}
	var took []float64
	for _, r := range runs {
		took = append(took, r.Took.Seconds())
	}
	slices.Sort(took)
	return fmt.Sprintf("\nTakeover, %d rounds: a caddy-air instance with %d streams in flight killed with SIGKILL beside %d others on the cluster; "+
		"every stream recorded `interrupted` after %s s (median; min %s, max %s).\n",
		len(runs), takeoverStreams, instances, f(median(took), 1), f(took[0], 1), f(took[len(took)-1], 1))
}
