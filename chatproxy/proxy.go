package chatproxy

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/caddy-air/caddy-air/apierror"
	"github.com/caddy-air/caddy-air/billing"
	"github.com/caddy-air/caddy-air/dialect"
	"github.com/caddy-air/caddy-air/health"
	"github.com/caddy-air/caddy-air/providers"
	"github.com/caddy-air/caddy-air/routing"
	"github.com/caddy-air/caddy-air/upstream"
	"go.uber.org/zap"
)

// DefaultTimeout applies when a provider sets no Timeout.
const DefaultTimeout = 10 * time.Minute

// RequestIDHeader carries the request's id (its ledger record's id) to the
// upstream, so that a provider's logs can be matched with the ledger.
const RequestIDHeader = "X-Air-Request-Id"

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
	// Logger receives the log line of every upstream attempt (see
	// routing.Target.LogAttempt); nil disables them.
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
	Attempts upstream.Observer
	// Router picks every attempt's upstream. When nil, or for a Call
	// without a Route, each provider gets a router of its own, made on
	// first use.
	Router *routing.Router

	adhoc sync.Map // *providers.Provider → *routing.Router
}

// Call is one request to proxy.
type Call struct {
	// Wire is the request's wire protocol: its error shape, its auth
	// headers and its answer's usage tap. It is required.
	Wire dialect.Wire
	// Operation names the endpoint in spans and logs (chat, messages,
	// responses, embeddings, count_tokens); empty means the Wire's.
	Operation string
	// Provider serves the request.
	Provider *providers.Provider
	// Path is appended to the provider's base URL: "/chat/completions" or
	// "/messages".
	Path string
	// Body is the upstream request body, from dialect.PrepareBody.
	Body []byte
	// BodyPin, when set, is told of every reader of Body handed to a
	// transport: Pin when it is made, Unpin once the transport closed it,
	// which may be after Serve returns (see http.RoundTripper). The caller
	// keeps Body unchanged until every Pin has had its Unpin.
	BodyPin Pinner
	// Inspected describes the client's body.
	Inspected dialect.Inspected
	// StripUsage removes from a stream the usage the gateway injected
	// (dialect.PrepareBody's injectedUsage; see dialect.Wire.StreamUsage).
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
	// Attempts, when set, holds the only attempt made, in place of the
	// router's (a Responses request pinned to the deployment that holds
	// its response).
	Attempts []providers.Attempt
	// Route is the model's route, whose deployments and fallbacks the
	// router picks from; nil routes to Provider alone.
	Route *providers.Route
	// Tokens is the request's estimated tokens, for the routing limits.
	Tokens int64
	// BodyModel is the upstream model name Body was prepared for, "" for
	// the client's.
	BodyModel string
	// Rebody, when set, prepares the body for a target that takes another
	// model name than BodyModel (another deployment, a fallback).
	Rebody func(upstreamModel string) ([]byte, error)
	// Client names whose request it is (the user), so that the
	// provider's health counts the clients its failures came from.
	Client string
	// ContentType is the upstream request's Content-Type; empty means
	// application/json. A multipart body keeps the client's, whose
	// boundary it was written with.
	ContentType string
	// Binary marks an answer that is a file (speech audio), not JSON: it
	// is not read for usage, and no more than a pooled buffer of it
	// (32 KiB) is held; the rest is forwarded and flushed as it arrives,
	// so that a large file costs no memory of its size.
	Binary bool
	// Leg, when set, adapts each attempt to its target, which may speak
	// another protocol than the client (a fallback model of the other
	// protocol): the attempt is sent and tapped as the Leg says, in place
	// of Wire, Path, Body, Rebody and StripUsage, and its answer is
	// written to the Leg's Writer. Wire then stays the client's, the
	// shape of the errors the proxy makes itself.
	Leg func(t *routing.Target) (*Leg, error)

	// newRequest and transcode are the Leg's, for its attempt.
	newRequest func(ctx context.Context, a providers.Attempt, body []byte) (*http.Request, error)
	transcode  func(*http.Response) *http.Response
}

// Leg is one attempt's protocol, path and body, and the writer its answer
// goes to (a translating one, or the client's).
type Leg struct {
	// Wire is the target's: its auth headers and usage tap.
	Wire dialect.Wire
	// Path is appended to the target's base URL.
	Path string
	// Body is the upstream request body for the target.
	Body []byte
	// StripUsage is Call.StripUsage for this body.
	StripUsage bool
	// Writer receives the answer; nil is the client's writer.
	Writer http.ResponseWriter
	// NewRequest, when set, builds the attempt's upstream request to a
	// (its URL, content headers and credentials, for Body), in place of
	// the base URL, Path and Wire's key headers: a cloud provider's
	// endpoint, which names the model in the URL and signs or
	// authenticates each request. The proxy then adds its own headers
	// (request id, trace context) and sends it.
	NewRequest func(ctx context.Context, a providers.Attempt, body []byte) (*http.Request, error)
	// Transcode, when set, turns the upstream's answer into Wire's
	// wire before the proxy reads it (a cloud's answer into Messages):
	// what it returns is then forwarded, tapped and billed as an answer
	// of Wire.
	Transcode func(*http.Response) *http.Response
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
	// Target is the last attempt's target: the deployment (and model,
	// when a fallback) that answered, when Reached.
	Target *routing.Target
	// ResponseID and ResponseStatus are a Responses answer's id and last
	// status ("completed", "queued"...), empty when it reported none.
	ResponseID, ResponseStatus string
	// Writer is where Held is to be released: the client's writer, or the
	// Leg's that wrote the answer.
	Writer http.ResponseWriter
}

// Close releases what r holds.
func (r *Result) Close() { r.Held.Close() }

// Serve sends c upstream and writes the beginning of the response to w,
// holding back its end in Result.Held. Each attempt's target comes from
// the router (package routing): the model's deployments, balanced, then
// its fallbacks. Attempts that fail before the response headers
// (connection refused or reset, or no headers within the provider's try
// timeout; not its timeout) or answer 429, 5xx, 401 or 402 move on
// to the next target, as long as nothing has been written to the client.
// When none remains, the last attempt's answer is passed through if it
// was a 429 or 5xx (its status, Retry-After and error, rebuilt and
// scrubbed by apierror.UpstreamBody, as every upstream error is); 504
// upstream_timeout if it exceeded its try timeout; else (a connection
// failure, an upstream credential refused, or no upstream available at
// all) the client gets 503 upstream_unavailable with Retry-After. An
// upstream that does not answer within the provider's timeout gets 504
// upstream_timeout. Other upstream statuses are passed through at once,
// an error (400 and up, 403 included) rebuilt and scrubbed the same way.
func (p *Proxy) Serve(w http.ResponseWriter, r *http.Request, c *Call) Result {
	s := serving{p: p, c: c, w: w, r: r, res: Result{Provider: c.Provider.Name, Writer: w}}
	run := upstream.Runner{Logger: p.Logger, Health: p.Health, Observer: p.Attempts}
	spec := upstream.Spec{Operation: c.operation(), Model: c.Inspected.Model, RequestID: c.RequestID, Client: c.Client}
	err := run.Run(r.Context(), p.plan(c), &spec, &s)
	switch {
	case err == nil:
		return s.res
	case s.unprepared:
		return p.giveUp(c, &s.res, nil, legged{}, 0, err)
	}
	return p.giveUp(c, &s.res, s.failed, s.failedLeg, s.tryTimedOut, err)
}

// giveUp answers a request no attempt served: 499 when the client left;
// the last attempt's 429 or 5xx answer, failed, passed through; 504
// upstream_timeout when the last attempt exceeded its try timeout,
// tryTimedOut; else 503 upstream_unavailable with the Retry-After the
// router gives.
func (p *Proxy) giveUp(c *Call, res *Result, failed *failure, fl legged, tryTimedOut time.Duration, err error) Result {
	var un *routing.Unavailable
	if failed != nil && errors.As(err, &un) {
		res.Reached, res.Status, res.Outcome, res.Source = true, failed.status, OutcomeUpstreamError, billing.SourceReported
		res.Held = &Held{shape: fl.c.Wire.ErrorShape(), status: failed.status, header: failed.header, body: failed.body}
		res.Writer = fl.w
		return *res
	}
	res.Usage, res.Source = promptEstimate(c), billing.SourceEstimated
	if !errors.As(err, &un) {
		res.Status, res.Outcome = 499, OutcomeCanceled
		if res.Err == nil {
			res.Err = err
		}
		return *res
	}
	if tryTimedOut > 0 {
		res.Status, res.Outcome = http.StatusGatewayTimeout, OutcomeTimeout
		res.Held = heldError(c.Wire.ErrorShape(), apierror.New(http.StatusGatewayTimeout, apierror.TypeUpstream, "upstream_timeout",
			fmt.Sprintf("no upstream provider of this model answered within its try_timeout of %s", tryTimedOut)))
		return *res
	}
	res.Status, res.Outcome = http.StatusServiceUnavailable, OutcomeUnavailable
	if res.Err == nil {
		res.Err = err
	}
	e := apierror.New(http.StatusServiceUnavailable, apierror.TypeUpstream, "upstream_unavailable",
		"no upstream provider of this model could serve the request; retry after the time in Retry-After")
	e.RetryAfter = un.RetryAfterSeconds()
	res.Held = heldError(c.Wire.ErrorShape(), e)
	return *res
}

// legged is an attempt's call and the writer of its answer.
type legged struct {
	c *Call
	w http.ResponseWriter
}

// legFor is what an attempt to t sends and where its answer goes: c, its
// body and w, or, when c has a Leg, the Leg's protocol, path, body and
// writer, in a copy of c.
func (p *Proxy) legFor(c *Call, w http.ResponseWriter, t *routing.Target) (legged, []byte, error) {
	if c.Leg == nil {
		body, err := p.bodyFor(c, t)
		return legged{c, w}, body, err
	}
	l, err := c.Leg(t)
	if err != nil {
		return legged{c, w}, nil, err
	}
	cc := *c
	cc.Wire, cc.Path, cc.Body, cc.StripUsage, cc.Rebody = l.Wire, l.Path, l.Body, l.StripUsage, nil
	cc.newRequest, cc.transcode = l.NewRequest, l.Transcode
	if l.Writer != nil {
		w = l.Writer
	}
	return legged{&cc, w}, l.Body, nil
}

// bodyFor is the body to send to t: c.Body, or, for a target that takes
// another model name, the body c.Rebody makes for it.
func (p *Proxy) bodyFor(c *Call, t *routing.Target) ([]byte, error) {
	if t.UpstreamModel == c.BodyModel || c.Rebody == nil {
		return c.Body, nil
	}
	return c.Rebody(t.UpstreamModel)
}

// promptEstimate is the usage of a request that got no answer: its
// prompt, estimated, and no output.
func promptEstimate(c *Call) billing.Usage {
	return billing.Usage{Input: dialect.EstimateTokens(int64(c.Inspected.PromptBytes))}
}

// retryable reports a status worth another attempt.
func retryable(status int) bool { return routing.Retryable(status) }

// plan starts the attempts of c: the pinned attempt, the router's plan
// for c.Route, or the plan of a router of c.Provider alone.
func (p *Proxy) plan(c *Call) *routing.Plan {
	if len(c.Attempts) > 0 {
		return p.providerRouter(c.Provider).Plan(routing.Request{Route: c.Route, Tokens: c.Tokens,
			Pin: &routing.Pin{Provider: c.Provider, Attempt: c.Attempts[0]}})
	}
	if p.Router != nil && c.Route != nil {
		return p.Router.Plan(routing.Request{Route: c.Route, Tokens: c.Tokens})
	}
	rt := p.providerRouter(c.Provider)
	return rt.Plan(routing.Request{Route: rt.Table().Routes()[0], Tokens: c.Tokens})
}

// providerRouter returns the router of prov alone, made on first use.
func (p *Proxy) providerRouter(prov *providers.Provider) *routing.Router {
	if p.Router != nil && p.Router.Table().Provider(prov.Name) == prov {
		return p.Router
	}
	if r, ok := p.adhoc.Load(prov); ok {
		return r.(*routing.Router)
	}
	r := routing.ForProvider(prov)
	actual, _ := p.adhoc.LoadOrStore(prov, r)
	return actual.(*routing.Router)
}
