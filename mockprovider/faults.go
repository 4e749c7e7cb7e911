package mockprovider

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// FaultMode is how a mock instance fails a request its Fault picked.
type FaultMode int

// The fault modes. A status mode answers at once in the protocol's error
// shape; the others misbehave at the transport level.
const (
	// FaultStatus answers with Fault.Status (429 and 503 with Retry-After).
	FaultStatus FaultMode = iota
	// FaultHang sends nothing until the client gives up, the handler is
	// closed, or Fault.Delay (default DefaultHangLimit) passes, which is
	// answered 504.
	FaultHang
	// FaultSlow waits Fault.Delay (default DefaultSlowDelay) before the
	// first byte, then answers normally.
	FaultSlow
	// FaultReset closes the connection without answering, with a TCP RST
	// where the connection allows it.
	FaultReset
	// FaultCut answers normally but closes the connection mid-way: after
	// the first two events of a stream, or half of any other body.
	FaultCut
)

// Defaults of the fault modes.
const (
	// DefaultSlowDelay is how long a slow fault holds the first byte.
	DefaultSlowDelay = 5 * time.Second
	// DefaultHangLimit bounds a hang whose Delay is not set.
	DefaultHangLimit = 10 * time.Minute
	// DefaultRetryAfter is the Retry-After of a 429 or 503 fault.
	DefaultRetryAfter = time.Second
	// cutEvents is how many stream events a cut fault lets through.
	cutEvents = 2
)

// Fault fails a share of the requests of a mock instance, so that two
// instances behave as a healthy and a failing upstream. It applies to every
// authorized API request (chat, messages, responses, embeddings, images,
// videos and their polls, models), not to image file downloads.
type Fault struct {
	// Rate is the probability, from 0 to 1, that a request gets this
	// fault. The rates of a Config's faults add up to at most 1: one draw
	// per request picks at most one of them.
	Rate float64
	// Mode is how the request fails.
	Mode FaultMode
	// Status is the HTTP error status (400 to 599) of a FaultStatus.
	Status int
	// RetryAfter is the Retry-After of a 429 or 503, rounded up to whole
	// seconds. Default: DefaultRetryAfter.
	RetryAfter time.Duration
	// Delay is the time to first byte of FaultSlow and the bound of
	// FaultHang.
	Delay time.Duration
	// For, if positive, limits the fault to that long after New, so that
	// a run can watch the upstream recover.
	For time.Duration
}

// ParseFaultMode reads a fault mode as the Caddyfile spells it: an HTTP
// error status from 400 to 599, hang, slow, reset or cut.
func ParseFaultMode(s string) (FaultMode, int, error) {
	switch s {
	case "hang":
		return FaultHang, 0, nil
	case "slow":
		return FaultSlow, 0, nil
	case "reset":
		return FaultReset, 0, nil
	case "cut":
		return FaultCut, 0, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || forcedStatus(int64(n)) == 0 {
		return 0, 0, fmt.Errorf("fault mode %q: want an HTTP status from 400 to 599, hang, slow, reset or cut", s)
	}
	return FaultStatus, n, nil
}

// validateFaults checks the faults of a Config.
func validateFaults(faults []Fault) error {
	sum := 0.0
	for i, f := range faults {
		if math.IsNaN(f.Rate) || f.Rate < 0 || f.Rate > 1 {
			return fmt.Errorf("fault %d: rate %v is not from 0 to 1", i, f.Rate)
		}
		if f.Mode == FaultStatus && forcedStatus(int64(f.Status)) == 0 {
			return fmt.Errorf("fault %d: status %d is not from 400 to 599", i, f.Status)
		}
		if f.Mode < FaultStatus || f.Mode > FaultCut {
			return fmt.Errorf("fault %d: unknown mode %d", i, f.Mode)
		}
		if f.RetryAfter < 0 || f.Delay < 0 || f.For < 0 {
			return fmt.Errorf("fault %d: negative duration", i)
		}
		sum += f.Rate
	}
	if sum > 1+1e-9 {
		return fmt.Errorf("fault rates add up to %v, more than 1", sum)
	}
	return nil
}

// faults draws which fault, if any, each request gets.
type faults struct {
	list  []Fault
	start time.Time
	seed  uint64
	n     atomic.Uint64
	// done ends every hang when the handler is closed.
	done   chan struct{}
	closed atomic.Bool
}

// pick returns the fault of the next request, or nil. The draws are a
// splitmix64 sequence from the seed, so a seeded instance fails the same
// requests, by arrival order, on every run.
func (fs *faults) pick(now time.Time) *Fault {
	if len(fs.list) == 0 {
		return nil
	}
	u := float64(splitmix64(fs.seed+fs.n.Add(1)*0x9e3779b97f4a7c15)>>11) / (1 << 53)
	since := now.Sub(fs.start)
	for i := range fs.list {
		f := &fs.list[i]
		if u < f.Rate {
			if f.For > 0 && since >= f.For {
				return nil
			}
			return f
		}
		u -= f.Rate
	}
	return nil
}

// splitmix64 is the finalizer of SplitMix64: a bijective mix of x.
func splitmix64(x uint64) uint64 {
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// close ends every hang in progress and those to come.
func (fs *faults) close() {
	if fs.closed.CompareAndSwap(false, true) {
		close(fs.done)
	}
}

// errCut is what a cut response's writes return once the connection is
// closed.
var errCut = errors.New("mock fault: connection cut")

// inject applies the fault f to a request about to be served, answering in
// Anthropic's shape when anthropic is set. It returns the writer to serve
// the request with, and nil when the request has been answered (or
// dropped) already. finish must be called once the request is served.
func (fs *faults) inject(w http.ResponseWriter, r *http.Request, f *Fault, anthropic bool) (_ http.ResponseWriter, finish func()) {
	nothing := func() {}
	switch f.Mode {
	case FaultStatus:
		w.Header().Set("X-Mock-Fault", strconv.Itoa(f.Status))
		writeFaultError(w, f.Status, f.RetryAfter, anthropic, "mock upstream fault")
		return nil, nothing
	case FaultReset:
		abort(w, true)
		return nil, nothing
	case FaultHang:
		limit := f.Delay
		if limit <= 0 {
			limit = DefaultHangLimit
		}
		if fs.wait(w, r, limit) {
			w.Header().Set("X-Mock-Fault", "hang")
			writeFaultError(w, http.StatusGatewayTimeout, 0, anthropic, "mock upstream fault: no answer in "+limit.String())
		}
		return nil, nothing
	case FaultSlow:
		delay := f.Delay
		if delay <= 0 {
			delay = DefaultSlowDelay
		}
		if !fs.wait(w, r, delay) {
			return nil, nothing
		}
		w.Header().Set("X-Mock-Fault", "slow")
		return w, nothing
	case FaultCut:
		w.Header().Set("X-Mock-Fault", "cut")
		cw := &cutWriter{ResponseWriter: w}
		return cw, cw.cut
	}
	return w, nothing
}

// wait pauses r for d. It reports false when the request's context ended
// first; closing the handler ends the pause early, reporting true. The
// body is read first (and kept for the handler), as a provider does: the
// HTTP/1 server notices a client that hangs up only once the body is read.
func (fs *faults) wait(w http.ResponseWriter, r *http.Request, d time.Duration) bool {
	if body, _, err := readBody(w, r); err == nil {
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	ctx := r.Context()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-fs.done:
		return true
	case <-t.C:
		return true
	}
}

// writeFaultError answers with status in the protocol's error shape;
// a 429 or 503 carries Retry-After.
func writeFaultError(w http.ResponseWriter, status int, retry time.Duration, anthropic bool, msg string) {
	if status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable {
		if retry <= 0 {
			retry = DefaultRetryAfter
		}
		secs := int64((retry + time.Second - 1) / time.Second)
		w.Header().Set("Retry-After", strconv.FormatInt(secs, 10))
	}
	if anthropic {
		writeAnthropicError(w, status, anthropicStatusError(status), msg)
		return
	}
	typ, code := openAIStatusError(status)
	writeOpenAIError(w, status, typ, code, "", msg)
}

// abort drops the connection of w without completing the response: with
// a TCP RST when rst is set and the connection is TCP, otherwise closed.
// A connection that cannot be hijacked (HTTP/2) is aborted with
// http.ErrAbortHandler, which resets the stream.
func abort(w http.ResponseWriter, rst bool) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	if rst {
		c := any(conn)
		for {
			if l, ok := c.(interface{ SetLinger(int) error }); ok {
				_ = l.SetLinger(0)
				break
			}
			u, ok := c.(interface{ NetConn() net.Conn })
			if !ok {
				break
			}
			c = u.NetConn()
		}
	}
	_ = conn.Close()
}

// cutWriter passes a response through until its cut point, then drops the
// connection: after cutEvents writes of an event stream, or half of any
// other body (by Content-Length, or of its first write).
type cutWriter struct {
	http.ResponseWriter
	wrote  bool
	stream bool
	limit  int64 // bytes of a body still to let through; -1 until known
	writes int
	done   bool
}

// WriteHeader notes the kind of body and passes the status on.
func (c *cutWriter) WriteHeader(status int) {
	if c.wrote || c.done {
		return
	}
	c.wrote = true
	h := c.ResponseWriter.Header()
	c.stream = strings.HasPrefix(h.Get("Content-Type"), "text/event-stream")
	c.limit = -1
	if n, err := strconv.ParseInt(h.Get("Content-Length"), 10, 64); err == nil {
		c.limit = n / 2
	}
	c.ResponseWriter.WriteHeader(status)
}

// Write passes b on up to the cut point, where it drops the connection.
func (c *cutWriter) Write(b []byte) (int, error) {
	if c.done {
		return 0, errCut
	}
	if !c.wrote {
		c.WriteHeader(http.StatusOK)
	}
	if c.stream {
		if c.writes++; c.writes > cutEvents {
			c.cut()
			return 0, errCut
		}
		return c.ResponseWriter.Write(b)
	}
	if c.limit < 0 {
		c.limit = int64(len(b) / 2)
	}
	if int64(len(b)) <= c.limit {
		c.limit -= int64(len(b))
		return c.ResponseWriter.Write(b)
	}
	n, _ := c.ResponseWriter.Write(b[:c.limit])
	c.cut()
	return n, errCut
}

// FlushError flushes what was let through; after the cut it fails.
func (c *cutWriter) FlushError() error {
	if c.done {
		return errCut
	}
	return http.NewResponseController(c.ResponseWriter).Flush()
}

// Unwrap gives http.ResponseController the writer underneath.
func (c *cutWriter) Unwrap() http.ResponseWriter { return c.ResponseWriter }

// cut flushes what was let through and drops the connection, once.
func (c *cutWriter) cut() {
	if c.done {
		return
	}
	c.done = true
	if !c.wrote {
		c.ResponseWriter.WriteHeader(http.StatusOK)
	}
	_ = http.NewResponseController(c.ResponseWriter).Flush()
	abort(c.ResponseWriter, false)
}
