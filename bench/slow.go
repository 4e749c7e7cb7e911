package main

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// slowResult is the outcome of holding many slow streams open.
type slowResult struct {
	result
	// Start is when the first stream was requested.
	Start time.Time
	// AllOpen is when the last stream received its headers; zero if some
	// never did.
	AllOpen time.Time
	// FirstDone is when the first stream ended; zero if none did.
	FirstDone time.Time
}

// slowStreams opens n streams of r, spread evenly over ramp, and reads each
// to its end; each may take at most timeout.
func slowStreams(ctx context.Context, client *http.Client, r request, n int, ramp, timeout time.Duration) slowResult {
	var c collector
	var wg sync.WaitGroup
	var opened atomic.Int64
	var mu sync.Mutex
	var allOpen, firstDone time.Time
	start := time.Now()
	onOpen := func() {
		if opened.Add(1) == int64(n) {
			mu.Lock()
			allOpen = time.Now()
			mu.Unlock()
		}
	}
	for i := range n {
		due := start.Add(time.Duration(i) * ramp / time.Duration(n))
		if wait := time.Until(due); wait > 0 {
			select {
			case <-ctx.Done():
			case <-time.After(wait):
			}
		}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			rctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			d, err := do(rctx, client, r, onOpen)
			mu.Lock()
			if firstDone.IsZero() {
				firstDone = time.Now()
			}
			mu.Unlock()
			c.add(d, err)
		}()
	}
	wg.Wait()
	return slowResult{result: c.result(time.Since(start)), Start: start, AllOpen: allOpen, FirstDone: firstDone}
}
