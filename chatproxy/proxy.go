package chatproxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptrace"
	"sync/atomic"
	"time"

	"github.com/caddy-air/caddy-air/apierror"
	"github.com/caddy-air/caddy-air/billing"
	"github.com/caddy-air/caddy-air/health"
	"github.com/caddy-air/caddy-air/providers"
	"github.com/caddy-air/caddy-air/telemetry"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// DefaultTimeout applies when a provider sets no Timeout.
const DefaultTimeout = 10 * time.Minute

// RequestIDHeader carries the request's id (its ledger record's id) to the
// upstream, so that a provider's logs can be matched with the ledger.
const RequestIDHeader = "X-Air-Request-Id"

// DefaultAnthropicVersion is sent upstream when an Anthropic client sends
// no anthropic-version header.
const DefaultAnthropicVersion = "2023-06-01"

// Outcomes of a proxied request, reported in Result.Outcome.
const (
	// OutcomeOK is a response delivered in full.
	OutcomeOK = "ok"
	// OutcomePartial is a response the client abandoned midway.
	OutcomePartial = "partial"
	// OutcomeUpstreamError is an upstream error status passed through, an
	// error event inside a stream, or a stream the upstream broke off.
	OutcomeUpstreamError = "upstream_error"
	// OutcomeTimeout is an upstream that did not answer, or fell silent,
	// within the provider's timeout.
	OutcomeTimeout = "timeout"
	// OutcomeUnavailable is no upstream reachable at all.
	OutcomeUnavailable = "unavailable"
	// OutcomeCanceled is a client that left before any upstream answered.
	// The upstream may have received the request (Result.Wrote).
	OutcomeCanceled = "canceled"
)

var (
	errTimeout    = errors.New("upstream timed out")
	errClientGone = errors.New("client went away")
)

// Proxy forwards chat requests to providers. Its zero value is usable.
type Proxy struct {
	// Transport sends upstream requests; nil means http.DefaultTransport.
	// It is used as a RoundTripper: redirects are not followed.
	Transport http.RoundTripper
	// Logger receives debug logs of retried attempts; nil disables them.
	Logger *zap.Logger
	// Health, when set, counts the result of every upstream attempt per
	// provider.
	Health *health.Tracker
	// MaxJSONDepth bounds the nesting of the upstream JSON the proxy reads
	// usage from (stream chunks and response bodies); zero means
	// jsonlimit.DefaultMaxDepth. Deeper responses are forwarded untouched
	// and their usage is estimated.
	MaxJSONDepth int
	// Attempts, if set, is told of every upstream attempt.
	Attempts AttemptObserver
}

// AttemptObserver is told of each upstream attempt: the provider's name,
// the attempt's result (one of the Attempt* constants) and whether another
// attempt followed it.
type AttemptObserver interface {
	Attempt(provider, result string, retried bool)
}

// Results of an upstream attempt, for AttemptObserver.
const (
	// AttemptOK is an answer with a 1xx, 2xx or 3xx status.
	AttemptOK = "ok"
	// AttemptStatus4xx is an answer with a 4xx status other than 429.
	AttemptStatus4xx = "status_4xx"
	// AttemptStatus429 is an answer with status 429.
	AttemptStatus429 = "status_429"
	// AttemptStatus5xx is an answer with a 5xx status.
	AttemptStatus5xx = "status_5xx"
	// AttemptConnectError is no answer: the connection failed.
	AttemptConnectError = "connect_error"
	// AttemptTimeout is no answer within the provider's timeout.
	AttemptTimeout = "timeout"
	// AttemptCanceled is a client that left before the answer.
	AttemptCanceled = "canceled"
)

// statusResult is the attempt result of an answer with status.
func statusResult(status int) string {
	switch {
	case status == http.StatusTooManyRequests:
		return AttemptStatus429
	case status >= 500:
		return AttemptStatus5xx
	case status >= 400:
		return AttemptStatus4xx
	}
	return AttemptOK
}

// observe tells the observer, if any, of an attempt.
func (p *Proxy) observe(c *Call, result string, retried bool) {
	if p.Attempts != nil {
		p.Attempts.Attempt(c.Provider.Name, result, retried)
	}
}

// Call is one request to proxy.
type Call struct {
	// Protocol selects the error shape, the auth headers and the usage
	// format.
	Protocol Protocol
	// Provider serves the request.
	Provider *providers.Provider
	// Path is appended to the provider's base URL: "/chat/completions" or
	// "/messages".
	Path string
	// Body is the upstream request body, from PrepareBody.
	Body []byte
	// BodyPin, when set, is told of every reader of Body handed to a
	// transport: Pin when it is made, Unpin once the transport closed it,
	// which may be after Serve returns (see http.RoundTripper). The caller
	// keeps Body unchanged until every Pin has had its Unpin.
	BodyPin Pinner
	// Inspected describes the client's body.
	Inspected Inspected
	// StripUsage removes from an OpenAI stream the usage the gateway
	// injected (PrepareBody's injectedUsage).
	StripUsage bool
	// ClientHeader is the client's request header; only anthropic-version
	// and anthropic-beta are forwarded from it.
	ClientHeader http.Header
	// RequestID identifies the request in logs, and is sent upstream as
	// RequestIDHeader.
	RequestID string
	// Method is the upstream request's method; empty means POST. A
	// request without a Body (GET, DELETE) is sent without one.
	Method string
	// Attempts, when set, are the only attempts made, in place of the
	// provider's (a Responses request pinned to the deployment that holds
	// its response).
	Attempts []providers.Attempt
}

// Result is what happened to a call. Serve writes at most the beginning of
// a response: what remains, if anything, is in Held, for the caller to
// write once the request's record is durable.
type Result struct {
	// Reached is true when an upstream answered with a status.
	Reached bool
	// Wrote is true when a request was written to an upstream, which may
	// have done the work even if it never answered: the caller writes one
	// ledger record when Reached or Wrote is set.
	Wrote bool
	// Status is the HTTP status the client is answered with; 499 when the
	// client left before any upstream answered and nothing was written.
	Status int
	// Usage is the request's token usage.
	Usage billing.Usage
	// Source says how Usage was obtained.
	Source billing.Source
	// ServiceTier is the service tier the upstream reported serving the
	// request at, "" if it reported none.
	ServiceTier string
	// Outcome is one of the Outcome* constants.
	Outcome string
	// Attempts is the number of upstream attempts made.
	Attempts int
	// Provider is the provider's name.
	Provider string
	// BytesOut counts the body bytes written to the client so far.
	BytesOut int64
	// FirstByte is when the first event of a stream was written to the
	// client; zero if none was, or the response is not a stream.
	FirstByte time.Time
	// Held is the rest of the response, nil when nothing remains to be
	// written (the client left). Close it when done.
	Held *Held
	// Err is the last error met, for logs; nil on success.
	Err error
	// Attempt is the attempt whose answer was delivered, when Reached.
	Attempt providers.Attempt
	// ResponseID and ResponseStatus are a Responses answer's id and last
	// status ("completed", "queued"...), empty when it reported none.
	ResponseID, ResponseStatus string
}

// Close releases what r holds.
func (r *Result) Close() { r.Held.Close() }

// Serve sends c upstream and writes the beginning of the response to w,
// holding back its end in Result.Held. Attempts that fail before the
// response headers (connection refused or reset; not a timeout) or answer
// 429 or 5xx are retried on the provider's next base URL and key, as long
// as nothing has been written to the client; the last failure is then
// passed through (a status and body) or answered with 502
// upstream_unavailable (no connection). An upstream that does not answer
// within the provider's timeout gets 504 upstream_timeout. Other upstream
// statuses are passed through at once.
func (p *Proxy) Serve(w http.ResponseWriter, r *http.Request, c *Call) Result {
	res := Result{Provider: c.Provider.Name}
	timeout := c.Provider.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	attempts := c.Attempts
	if attempts == nil {
		attempts = c.Provider.Attempts()
	}
	var failed *failure
	for i, a := range attempts {
		res.Attempts = i + 1
		ctx, span := startAttempt(r.Context(), c, a, i)
		at := p.send(ctx, c, a, timeout)
		res.Wrote = res.Wrote || at.wrote.Load()
		if at.err != nil {
			at.close()
			res.Err = at.err
			if r.Context().Err() != nil {
				p.attemptFailed(span, c, 0, errTypeCanceled, at.err)
				p.observe(c, AttemptCanceled, false)
				res.Status, res.Outcome = 499, OutcomeCanceled
				res.Usage, res.Source = promptEstimate(c), billing.SourceEstimated
				return res
			}
			if context.Cause(at.ctx) == errTimeout {
				p.attemptFailed(span, c, 0, errTypeTimeout, errTimeout)
				p.observe(c, AttemptTimeout, false)
				res.Status, res.Outcome = http.StatusGatewayTimeout, OutcomeTimeout
				res.Usage, res.Source = promptEstimate(c), billing.SourceEstimated
				res.Held = heldError(c.Protocol, apierror.New(http.StatusGatewayTimeout, apierror.TypeUpstream, "upstream_timeout",
					fmt.Sprintf("the upstream provider did not answer within %s", timeout)))
				return res
			}
			p.attemptFailed(span, c, 0, errTypeUnavailable, at.err)
			p.observe(c, AttemptConnectError, i < len(attempts)-1)
			p.logRetry(c, a, i, at.err)
			continue
		}
		if i < len(attempts)-1 && retryable(at.resp.StatusCode) {
			p.observe(c, statusResult(at.resp.StatusCode), true)
			failed = readFailure(at.resp)
			at.close()
			res.Err = fmt.Errorf("upstream answered %d", failed.status)
			p.attemptFailed(span, c, failed.status, telemetry.StatusErrorType(failed.status), res.Err)
			p.logRetry(c, a, i, res.Err)
			continue
		}
		p.observe(c, statusResult(at.resp.StatusCode), false)
		// A traced attempt collects its answer's model and finish reasons.
		var meta *respMeta
		if span.IsRecording() {
			meta = new(respMeta)
		}
		res.Attempt = a
		p.deliver(w, r, c, at, &res, meta)
		at.close()
		p.attemptDelivered(span, c, &res, meta)
		return res
	}
	if failed != nil {
		res.Reached, res.Status, res.Outcome, res.Source = true, failed.status, OutcomeUpstreamError, billing.SourceReported
		res.Held = &Held{proto: c.Protocol, status: failed.status, header: failed.header, body: failed.body}
		return res
	}
	res.Status, res.Outcome = http.StatusBadGateway, OutcomeUnavailable
	res.Usage, res.Source = promptEstimate(c), billing.SourceEstimated
	if res.Err == nil {
		res.Err = errors.New("provider has no base url")
	}
	res.Held = heldError(c.Protocol, apierror.New(http.StatusBadGateway, apierror.TypeUpstream, "upstream_unavailable",
		"no upstream provider could be reached"))
	return res
}

// promptEstimate is the usage of a request that got no answer: its
// prompt, estimated, and no output.
func promptEstimate(c *Call) billing.Usage {
	return billing.Usage{Input: tokens(int64(c.Inspected.PromptBytes))}
}

// retryable reports a status worth another attempt.
func retryable(status int) bool {
	return status == http.StatusTooManyRequests || status >= 500
}

// logRetry logs a failed attempt at debug level.
func (p *Proxy) logRetry(c *Call, a providers.Attempt, i int, err error) {
	if p.Logger == nil {
		return
	}
	if ce := p.Logger.Check(zapcore.DebugLevel, "upstream attempt failed"); ce != nil {
		ce.Write(zap.String("request_id", c.RequestID), zap.String("provider", c.Provider.Name),
			zap.String("base_url", a.BaseURL), zap.Int("attempt", i+1), zap.Error(err))
	}
}

// writeError writes e in the protocol's error shape.
func writeError(w http.ResponseWriter, p Protocol, e *apierror.Error) {
	if p == Anthropic {
		e.WriteAnthropic(w)
		return
	}
	e.Write(w)
}

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
func (p *Proxy) send(ctx context.Context, c *Call, a providers.Attempt, timeout time.Duration) *attempt {
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
	var body io.ReadCloser = http.NoBody
	if c.Body != nil {
		body = newBodyReader(c.Body, c.BodyPin)
	}
	req, err := http.NewRequestWithContext(httptrace.WithClientTrace(ctx, trace), method, a.BaseURL+c.Path, body)
	if err != nil {
		body.Close()
		at.err = err
		return at
	}
	h := make(http.Header, 7)
	if c.Body != nil {
		req.ContentLength = int64(len(c.Body))
		req.GetBody = func() (io.ReadCloser, error) { return newBodyReader(c.Body, c.BodyPin), nil }
		h["Content-Type"] = jsonType
	}
	h["Accept-Encoding"] = identity
	if c.RequestID != "" {
		h[RequestIDHeader] = []string{c.RequestID}
	}
	if c.Protocol == Anthropic {
		if a.APIKey != "" {
			h["X-Api-Key"] = []string{a.APIKey}
		}
		if v := c.ClientHeader.Values("Anthropic-Version"); len(v) > 0 {
			h["Anthropic-Version"] = v
		} else {
			h["Anthropic-Version"] = []string{DefaultAnthropicVersion}
		}
		if v := c.ClientHeader.Values("Anthropic-Beta"); len(v) > 0 {
			h["Anthropic-Beta"] = v
		}
	} else if a.APIKey != "" {
		h["Authorization"] = []string{"Bearer " + a.APIKey}
	}
	telemetry.Inject(ctx, h)
	req.Header = h
	rt := p.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	at.resp, at.err = rt.RoundTrip(req)
	return at
}

// maxFailureBody bounds the body kept from a failed attempt that may be
// passed through after the next attempts fail to connect.
const maxFailureBody = 64 << 10

// failure is a retryable upstream answer kept in case it is the last one.
type failure struct {
	status int
	header http.Header
	body   []byte
}

// readFailure keeps the status, headers and (bounded) body of resp.
func readFailure(resp *http.Response) *failure {
	f := &failure{status: resp.StatusCode, header: make(http.Header)}
	copyHeader(f.header, resp.Header, false)
	f.body, _ = io.ReadAll(io.LimitReader(resp.Body, maxFailureBody))
	return f
}
