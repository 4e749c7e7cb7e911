package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"time"
)

// request is what one load-generating call sends.
type request struct {
	// URL is the chat completions endpoint.
	URL string
	// Key is the bearer token.
	Key string
	// Body is the JSON body.
	Body []byte
	// Stream says the answer is an SSE stream that must end with
	// "data: [DONE]".
	Stream bool
	// MinEvents, for a stream, is the fewest events it must carry: a
	// stream cut short by the upstream's max_tokens is an error, not a
	// cheaper stream.
	MinEvents int
}

// result is the outcome of a batch of requests.
type result struct {
	// OK counts the requests answered 2xx with a complete body.
	OK int
	// Errors counts the others: transport errors, non-2xx statuses,
	// truncated streams.
	Errors int
	// FirstError describes the first error.
	FirstError string
	// Latencies are the durations of the OK requests, from sending to the
	// end of the body, sorted.
	Latencies []time.Duration
	// FirstBytes are, for the OK streams, the durations from sending to
	// the first byte of the body (the first event: time to first token),
	// sorted; empty for loads that are not streams.
	FirstBytes []time.Duration
	// Elapsed is the wall time from the first send to the last answer.
	Elapsed time.Duration
}

// collector gathers the outcomes of concurrent requests.
type collector struct {
	mu  sync.Mutex
	res result
}

func (c *collector) add(d time.Duration, err error) { c.addTimed(d, 0, err) }

// addTimed is add with the time to the body's first byte (0: not
// measured).
func (c *collector) addTimed(d, first time.Duration, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		c.res.Errors++
		if c.res.FirstError == "" {
			c.res.FirstError = err.Error()
		}
		return
	}
	c.res.OK++
	c.res.Latencies = append(c.res.Latencies, d)
	if first > 0 {
		c.res.FirstBytes = append(c.res.FirstBytes, first)
	}
}

func (c *collector) result(elapsed time.Duration) result {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := c.res
	r.Elapsed = elapsed
	slices.Sort(r.Latencies)
	slices.Sort(r.FirstBytes)
	return r
}

// newClient returns an HTTP/1.1 client keeping up to conns idle
// connections to one host.
func newClient(conns int) *http.Client {
	return &http.Client{Transport: &http.Transport{
		MaxIdleConns:        conns,
		MaxIdleConnsPerHost: conns,
		IdleConnTimeout:     time.Minute,
		DisableCompression:  true,
	}}
}

// do sends r once and reads the whole answer. If opened is not nil, it is
// called once the answer's headers arrived.
func do(ctx context.Context, client *http.Client, r request, opened func()) (time.Duration, error) {
	d, _, err := doTimed(ctx, client, r, opened)
	return d, err
}

// doTimed is do that also returns, for a stream, the time from sending to
// the first byte of the answer's body.
func doTimed(ctx context.Context, client *http.Client, r request, opened func()) (d, first time.Duration, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.URL, bytes.NewReader(r.Body))
	if err != nil {
		return 0, 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+r.Key)
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		return 0, 0, err
	}
	if opened != nil {
		opened()
	}
	fb := &firstByte{r: resp.Body}
	body, events, err := readBody(fb, r.Stream)
	resp.Body.Close()
	d = time.Since(start)
	if r.Stream && !fb.at.IsZero() {
		first = fb.at.Sub(start)
	}
	if err != nil {
		return 0, 0, err
	}
	if resp.StatusCode/100 != 2 {
		return 0, 0, fmt.Errorf("status %d: %.200s", resp.StatusCode, body)
	}
	if r.Stream && !bytes.HasSuffix(bytes.TrimSpace(body), []byte("data: [DONE]")) {
		return 0, 0, fmt.Errorf("stream not ended by [DONE]: ...%.200s", tail(body, 200))
	}
	if r.Stream && events < r.MinEvents {
		return 0, 0, fmt.Errorf("stream of %d events, want at least %d", events, r.MinEvents)
	}
	if !r.Stream && !bytes.Contains(body, []byte(`"choices"`)) {
		return 0, 0, fmt.Errorf("answer without choices: %.200s", body)
	}
	return d, first, nil
}

// firstByte is a reader that notes when its first byte arrived.
type firstByte struct {
	r  io.Reader
	at time.Time
}

func (f *firstByte) Read(p []byte) (int, error) {
	n, err := f.r.Read(p)
	if n > 0 && f.at.IsZero() {
		f.at = time.Now()
	}
	return n, err
}

// readBody reads body to its end. For a stream it keeps only the last
// 256 bytes, enough to check the end marker, so that long streams cost the
// harness no memory, and counts its events (each ends with a blank line).
func readBody(body io.Reader, stream bool) ([]byte, int, error) {
	if !stream {
		b, err := io.ReadAll(body)
		return b, 0, err
	}
	var last []byte
	events := 0
	prev := byte(0) // the last byte of the previous read
	buf := make([]byte, 4096)
	for {
		n, err := body.Read(buf)
		if n > 0 {
			if prev == '\n' && buf[0] == '\n' {
				events++
			}
			events += bytes.Count(buf[:n], []byte("\n\n"))
			prev = buf[n-1]
			last = append(last, buf[:n]...)
			last = append(last[:0], tail(last, 256)...)
		}
		if err == io.EOF {
			return last, events, nil
		}
		if err != nil {
			return last, events, err
		}
	}
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

// constantRate sends r at rate requests per second for d (rate*d requests
// in all), open loop (see openLoop). Each request may take at most timeout.
func constantRate(ctx context.Context, client *http.Client, r request, rate int, d time.Duration, maxInFlight int, timeout time.Duration) result {
	var c collector
	elapsed := openLoop(ctx, rate, d, maxInFlight, func() {
		rctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		c.addTimed(doTimed(rctx, client, r, nil))
	})
	return c.result(elapsed)
}

// closedLoop sends r from conns connections for d, closed loop: each
// sends its next request as soon as its last answer ended, as clients do
// that wait for an answer before they ask again (an agent chaining calls).
// Its throughput is what the proxy's latency allows. Each request may take
// at most timeout.
func closedLoop(ctx context.Context, client *http.Client, r request, conns int, d, timeout time.Duration) result {
	var c collector
	start := time.Now()
	end := start.Add(d)
	var wg sync.WaitGroup
	for range conns {
		wg.Go(func() {
			for ctx.Err() == nil && time.Now().Before(end) {
				rctx, cancel := context.WithTimeout(ctx, timeout)
				c.add(do(rctx, client, r, nil))
				cancel()
			}
		})
	}
	wg.Wait()
	return c.result(time.Since(start))
}

// openLoop calls send, each call in its own goroutine, rate times a second
// for d (rate*d calls in all), open loop: a call starts when due whether or
// not earlier ones returned, with at most maxInFlight running (beyond that
// the schedule slips, which shows as a lower request rate). It returns
// once every call returned, with the time from the first start to then.
func openLoop(ctx context.Context, rate int, d time.Duration, maxInFlight int, send func()) time.Duration {
	n := int(int64(rate) * int64(d) / int64(time.Second))
	interval := time.Second / time.Duration(rate)
	sem := make(chan struct{}, maxInFlight)
	var wg sync.WaitGroup
	start := time.Now()
	timer := time.NewTimer(0)
	defer timer.Stop()
	<-timer.C
send:
	for i := range n {
		if wait := time.Until(start.Add(time.Duration(i) * interval)); wait > 0 {
			timer.Reset(wait)
			select {
			case <-ctx.Done():
				break send
			case <-timer.C:
			}
		}
		select {
		case <-ctx.Done():
			break send
		case sem <- struct{}{}:
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			send()
		}()
	}
	wg.Wait()
	return time.Since(start)
}
