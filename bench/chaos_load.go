package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"
)

// chaosResult is what the clients of a chaos run saw.
type chaosResult struct {
	// OK counts the requests answered 2xx with a complete stream.
	OK int
	// Kinds counts the client-visible errors by kind (see errorKind).
	Kinds map[string]int
	// TTFB are the times to the first body byte of the OK requests, and
	// Total their times to the end of the stream, both sorted.
	TTFB, Total []time.Duration
	// Elapsed is the wall time of the run.
	Elapsed time.Duration
}

// Errors returns the number of client-visible errors.
func (r chaosResult) Errors() int {
	n := 0
	for _, k := range r.Kinds {
		n += k
	}
	return n
}

// ErrorRate returns the share of requests that failed, in percent.
func (r chaosResult) ErrorRate() float64 {
	return 100 * ratio(float64(r.Errors()), float64(r.OK+r.Errors()))
}

// KindsString lists the error kinds, most frequent first.
func (r chaosResult) KindsString() string {
	if len(r.Kinds) == 0 {
		return "none"
	}
	kinds := make([]string, 0, len(r.Kinds))
	for k := range r.Kinds {
		kinds = append(kinds, k)
	}
	sort.Slice(kinds, func(i, j int) bool {
		if r.Kinds[kinds[i]] != r.Kinds[kinds[j]] {
			return r.Kinds[kinds[i]] > r.Kinds[kinds[j]]
		}
		return kinds[i] < kinds[j]
	})
	parts := make([]string, len(kinds))
	for i, k := range kinds {
		parts[i] = fmt.Sprintf("%s ×%d", k, r.Kinds[k])
	}
	return strings.Join(parts, ", ")
}

// chaosCollector gathers the outcomes of concurrent chaos requests.
type chaosCollector struct {
	mu  sync.Mutex
	res chaosResult
}

func (c *chaosCollector) add(ttfb, total time.Duration, kind string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if kind != "" {
		if c.res.Kinds == nil {
			c.res.Kinds = map[string]int{}
		}
		c.res.Kinds[kind]++
		return
	}
	c.res.OK++
	c.res.TTFB = append(c.res.TTFB, ttfb)
	c.res.Total = append(c.res.Total, total)
}

// chaosRate sends the streaming request r at rate requests per second for
// d, open loop, each taking at most timeout, and records time to first
// byte and the kind of each failure.
func chaosRate(ctx context.Context, client *http.Client, r request, rate int, d time.Duration, maxInFlight int, timeout time.Duration) chaosResult {
	var c chaosCollector
	elapsed := openLoop(ctx, rate, d, maxInFlight, func() {
		rctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		c.add(doTTFB(rctx, client, r))
	})
	c.mu.Lock()
	defer c.mu.Unlock()
	res := c.res
	res.Elapsed = elapsed
	slices.Sort(res.TTFB)
	slices.Sort(res.Total)
	return res
}

// doTTFB sends r once and reads the whole stream. It returns the time to
// the first body byte and to the end, or the kind of error the client saw.
func doTTFB(ctx context.Context, client *http.Client, r request) (ttfb, total time.Duration, kind string) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.URL, bytes.NewReader(r.Body))
	if err != nil {
		return 0, 0, "request: " + err.Error()
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+r.Key)
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		return 0, 0, errorKind(err)
	}
	defer resp.Body.Close()
	var first [1]byte
	n, err := io.ReadFull(resp.Body, first[:])
	ttfb = time.Since(start)
	if resp.StatusCode/100 != 2 {
		return 0, 0, fmt.Sprintf("status %d", resp.StatusCode)
	}
	if n == 0 {
		return 0, 0, "empty answer"
	}
	if err != nil {
		return 0, 0, errorKind(err)
	}
	body, _, err := readBody(resp.Body, true)
	total = time.Since(start)
	if err != nil {
		return 0, 0, "stream broken: " + errorKind(err)
	}
	if r.Stream && !bytes.HasSuffix(bytes.TrimSpace(append(first[:], body...)), []byte("data: [DONE]")) {
		return 0, 0, "stream without [DONE]"
	}
	return ttfb, total, ""
}

// errorKind names a transport error briefly, for counting.
func errorKind(err error) string {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.Is(err, syscall.ECONNRESET):
		return "connection reset"
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return "unexpected EOF"
	}
	return "transport error"
}
