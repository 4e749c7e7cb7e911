package chatproxy

import (
	"context"
	"io"
	"math"
	"net/http"
	"net/http/httptrace"
	"sync/atomic"
	"time"

	"github.com/caddy-air/caddy-air/apierror"
	"github.com/caddy-air/caddy-air/dialect/authn"
	"github.com/caddy-air/caddy-air/providers"
	"github.com/caddy-air/caddy-air/telemetry"
	"github.com/caddy-air/caddy-air/upstream"
)

// attempt is one upstream request in flight. Its context is cancelled with
// errTimeout by its watchdog, or with errClientGone when the client leaves.
type attempt struct {
	ctx     context.Context
	cancel  context.CancelCauseFunc
	timer   atomic.Pointer[time.Timer]
	timeout time.Duration
	resp    *http.Response
	err     error
	// wrote is set once the request was written to the upstream.
	wrote atomic.Bool
	// alive is set by every read of the response that returns bytes, and
	// cleared by every tick of the watchdog; quiet counts the ticks in a
	// row that found it clear.
	alive atomic.Bool
	quiet atomic.Int32
}

// idleTicks is how many times per timeout an attempt's watchdog looks for
// reads. Reading a stream only sets a flag, without reading the clock or
// re-arming a timer; the price is precision: an upstream silent for
// between timeout and timeout·(1+1/idleTicks) is cut, one that answers or
// sends within timeout never is.
const idleTicks = 4

// newAttempt starts the watchdog of an attempt under parent.
func newAttempt(parent context.Context, timeout time.Duration) *attempt {
	ctx, cancel := context.WithCancelCause(parent)
	at := &attempt{ctx: ctx, cancel: cancel, timeout: timeout}
	t := time.AfterFunc(time.Duration(math.MaxInt64), at.tick)
	at.timer.Store(t)
	t.Reset(at.tickPeriod())
	return at
}

// tickPeriod is the time between two ticks of the watchdog.
func (at *attempt) tickPeriod() time.Duration { return max(at.timeout/idleTicks, 1) }

// tick is the watchdog: it cancels the attempt after idleTicks ticks in a
// row without a read (before the response headers, there is none).
func (at *attempt) tick() {
	if at.ctx.Err() != nil {
		return
	}
	if at.alive.Swap(false) {
		at.quiet.Store(0)
	} else if at.quiet.Add(1) >= idleTicks {
		at.cancel(errTimeout)
		return
	}
	at.timer.Load().Reset(at.tickPeriod())
}

// close releases the attempt: watchdog, response body and context.
func (at *attempt) close() {
	at.timer.Load().Stop()
	if at.resp != nil {
		at.resp.Body.Close()
	}
	at.cancel(nil)
}

// read records that the response is alive: a read returned bytes.
func (at *attempt) read() {
	if !at.alive.Load() {
		at.alive.Store(true)
	}
}

var (
	jsonType = []string{"application/json"}
	identity = []string{"identity"}
)

// send starts one attempt under ctx, the request's context with the
// attempt's span, and waits for the response headers.
func (p *Proxy) send(ctx context.Context, c *Call, body []byte, a providers.Attempt, timeout time.Duration) *attempt {
	at := newAttempt(ctx, timeout)
	ctx = at.ctx
	trace := &httptrace.ClientTrace{WroteRequest: func(i httptrace.WroteRequestInfo) {
		if i.Err == nil {
			at.wrote.Store(true)
		}
	}}
	method := c.Method
	if method == "" {
		method = http.MethodPost
	}
	var req *http.Request
	if c.newRequest != nil {
		req, at.err = p.endpointRequest(httptrace.WithClientTrace(ctx, trace), c, a, body)
		if at.err != nil {
			return at
		}
	} else {
		var rd io.ReadCloser = http.NoBody
		if body != nil {
			rd = newBodyReader(body, c.BodyPin)
		}
		var err error
		req, err = http.NewRequestWithContext(httptrace.WithClientTrace(ctx, trace), method, a.BaseURL+c.Path, rd)
		if err != nil {
			rd.Close()
			at.err = err
			return at
		}
		h := make(http.Header, 7)
		if body != nil {
			req.ContentLength = int64(len(body))
			req.GetBody = func() (io.ReadCloser, error) { return newBodyReader(body, c.BodyPin), nil }
			h["Content-Type"] = jsonType
			if c.ContentType != "" {
				h["Content-Type"] = []string{c.ContentType}
			}
		}
		h["Accept-Encoding"] = identity
		if c.RequestID != "" {
			h[RequestIDHeader] = []string{c.RequestID}
		}
		authn.SetAuth(h, c.Wire.Auth(), a.APIKey, c.ClientHeader)
		telemetry.Inject(ctx, h)
		req.Header = h
	}
	at.resp, at.err = upstream.Send(p.Transport, req)
	if at.err == nil && c.transcode != nil {
		at.resp = c.transcode(at.resp)
	}
	return at
}

// endpointRequest is the request c's endpoint (Leg.NewRequest) builds to
// a for body, with the proxy's own headers added.
func (p *Proxy) endpointRequest(ctx context.Context, c *Call, a providers.Attempt, body []byte) (*http.Request, error) {
	req, err := c.newRequest(ctx, a, body)
	if err != nil {
		return nil, err
	}
	h := req.Header
	h["Accept-Encoding"] = identity
	if c.RequestID != "" {
		h[RequestIDHeader] = []string{c.RequestID}
	}
	telemetry.Inject(ctx, h)
	return req, nil
}

// maxFailureBody bounds the body kept from a failed attempt that may be
// passed through after the next attempts fail to connect.
const maxFailureBody = 64 << 10

// failure is an upstream error answer: one kept in case it is the last
// of a retried request, or one passed on at once.
type failure struct {
	status int
	header http.Header
	// raw is the body as the upstream sent it (decoded), bounded; body is
	// what the client gets: raw rebuilt by apierror.UpstreamBody.
	raw, body []byte
}

// readFailure keeps the status, headers and (bounded) body of resp, the
// answer of attempt a to c, and makes the client's body of it: the
// error's status, type, code, param and message, scrubbed of account ids
// and credentials, in c's protocol shape (apierror.UpstreamBody).
func readFailure(c *Call, a providers.Attempt, resp *http.Response) *failure {
	f := &failure{status: resp.StatusCode, header: make(http.Header)}
	decodeBody(resp)
	copyHeader(f.header, resp.Header, false)
	f.raw, _ = io.ReadAll(io.LimitReader(resp.Body, maxFailureBody))
	f.body = apierror.UpstreamBody(f.status, f.raw, c.Wire.ErrorShape(), a.APIKey)
	delete(f.header, "Content-Encoding")
	f.header["Content-Type"] = jsonType
	return f
}
