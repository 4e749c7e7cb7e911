package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync"
	"time"
)

// fetchProfile saves the admin endpoint's pprof profile at path (e.g.
// "/debug/pprof/heap") to file.
func fetchProfile(ctx context.Context, p *caddyProcess, path, file string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.AdminURL(path), nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		return fmt.Errorf("GET %s: %s: %s", path, resp.Status, b)
	}
	out, err := os.Create(file)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, resp.Body); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// profileRun runs the load of one scenario (2 by default) against one
// target alone for the profile's duration plus two seconds, and meanwhile
// fetches a CPU profile (from the first second on) and a heap profile
// (half-way) from its admin endpoint. This run is not measured.
func (b *bench) profileRun(ctx context.Context, t *target, load longScenario) error {
	secs := b.opts.profileSeconds
	req := request{URL: t.proc.URL("/v1/chat/completions"), Key: t.key, Body: load.body, Stream: load.stream}
	done := make(chan result, 1)
	go func() {
		done <- constantRate(ctx, t.client, req, load.rate, time.Duration(secs+2)*time.Second, b.opts.inflight, 30*time.Second)
	}()
	var wg sync.WaitGroup
	var cpuErr, heapErr error
	if b.opts.cpuProfile != "" {
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(time.Second)
			cpuErr = fetchProfile(ctx, t.proc, fmt.Sprintf("/debug/pprof/profile?seconds=%d", secs), b.opts.cpuProfile)
		}()
	}
	if b.opts.heapProfile != "" {
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(time.Second + time.Duration(secs)*time.Second/2)
			heapErr = fetchProfile(ctx, t.proc, "/debug/pprof/heap", b.opts.heapProfile)
		}()
	}
	wg.Wait()
	res := <-done
	b.logf("profile run: %d requests, %d errors %s", res.OK+res.Errors, res.Errors, res.FirstError)
	if cpuErr != nil {
		return fmt.Errorf("cpu profile: %v", cpuErr)
	}
	if heapErr != nil {
		return fmt.Errorf("heap profile: %v", heapErr)
	}
	for _, f := range []string{b.opts.cpuProfile, b.opts.heapProfile} {
		if f != "" {
			b.logf("wrote %s", f)
		}
	}
	return nil
}
