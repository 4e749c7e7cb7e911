package gateway

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"go.uber.org/zap"

	"github.com/caddy-air/caddy-air/airmetrics"
	"github.com/caddy-air/caddy-air/apierror"
	"github.com/caddy-air/caddy-air/chatproxy"
	"github.com/caddy-air/caddy-air/dialect"
	"github.com/caddy-air/caddy-air/dialect/anthropic"
	"github.com/caddy-air/caddy-air/dialect/translate"
	"github.com/caddy-air/caddy-air/providers"
	"github.com/caddy-air/caddy-air/routing"
	"github.com/caddy-air/caddy-air/telemetry"
	"github.com/caddy-air/caddy-air/upstream"
)

// TokenCountHeader marks a count_tokens answer that is the gateway's own
// estimate (its value is "estimate"), not the provider's count.
const TokenCountHeader = "X-Air-Token-Count"

// Limits of a Google countTokens exchange (countTimeout when the provider
// sets no timeout).
const (
	countTimeout = 60 * time.Second
	maxCountBody = 1 << 20
)

// TokenCounter is the Count hook of Anthropic's count_tokens endpoint
// (air_count_tokens), over the running config's router and transport.
type TokenCounter struct {
	// Config is the running config.
	Config *Config
}

// Count answers a count_tokens request for a model whose provider
// does not speak Messages: Gemini's countTokens for a gemini or vertex
// model, else (openai, azure, bedrock, dashscope) the prompt estimate the
// gateway admits requests on, marked by TokenCountHeader. Either way the
// request counts against the rate limits, and leaves no ledger record.
func (tc TokenCounter) Count(x *Exchange) error {
	w, r, body, in, route, reservation := x.W, x.R, x.Body.Bytes(), x.In, x.Route, x.Reservation
	wire := WireOf(route)
	counter := translate.CounterOf(wire)
	if counter == nil {
		reservation.ReleaseCost()
		x.LogFields(zap.String("air_model", in.Model), zap.String("air_outcome", "estimate"))
		w.Header().Set(TokenCountHeader, "estimate")
		return writeCount(w, dialect.EstimateRequest(in, 0).Input)
	}
	start := time.Now()
	spec := upstream.Spec{Operation: countOperation, Model: in.Model, RequestID: x.RequestID, Client: x.Deps.Key.User}
	n, err := tc.CountUpstream(r.Context(), x.e.Proxy, x.e.Log, spec, body, wire, counter, route)
	var de *dialect.Error
	if err != nil && !errors.As(err, &de) {
		reservation.Release() // no upstream answered it
		return x.Refuse(err)
	}
	// The provider answered: a count, or its refusal.
	reservation.ReleaseCost()
	outcome, status := airmetrics.OutcomeOK, http.StatusOK
	if de != nil {
		outcome, status = airmetrics.OutcomeUpstreamError, de.Status
	}
	x.LogFields(zap.String("air_model", in.Model), zap.String("air_provider", route.Provider.Name), zap.String("air_outcome", outcome))
	x.e.Metrics.Route(route.Pattern).Observe(&airmetrics.Request{Endpoint: x.e.Endpoint.Name, Outcome: outcome, Status: status, Duration: SinceStart(start)})
	if de != nil {
		if de.RetryAfter > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(int((de.RetryAfter+time.Second-1)/time.Second)))
		}
		status, b := anthropic.Codec{}.EncodeError(de)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write(b)
		return &StatusError{Status: status, Err: fmt.Errorf("count_tokens upstream answered %d", status)}
	}
	return writeCount(w, n)
}

// writeCount writes Anthropic's count_tokens answer.
func writeCount(w http.ResponseWriter, n int64) error {
	w.Header().Set("Content-Type", "application/json")
	_, err := w.Write(append(strconv.AppendInt([]byte(`{"input_tokens":`), n, 10), '}'))
	return err
}

// countUpstream asks a deployment of the route to count the Messages
// request body's tokens: the body is translated as for generating, then
// sent, as the protocol's counter makes it, to the model's count method
// (Google's countTokens) with the provider's auth. The count is
// one attempt (upstream.Runner) to the router's first target among the
// model's own deployments; a fallback counts another model's tokens, so
// none is made. It returns an *apierror.Error for a request it cannot
// translate or send, and a *dialect.Error for the provider's refusal.
//
// proxy's logger, health tracker and attempt observer see the attempt;
// spec names it.
func (tc TokenCounter) CountUpstream(ctx context.Context, proxy *chatproxy.Proxy, log *zap.Logger, spec upstream.Spec, body []byte, wire string,
	counter *dialect.Counter, route *providers.Route) (int64, error) {
	x, err := translate.For(translate.Messages, wire).Request(body, translate.Options{DropParams: true, MaxTokens: 1})
	if err != nil {
		return 0, TranslationError(err)
	}
	router := tc.Config.Router
	if router == nil {
		return 0, apierror.Internal()
	}
	c := counting{transport: tc.Config.Transport, log: log, ctx: ctx, x: x, counter: counter}
	run := upstream.Runner{Logger: proxy.Logger, Health: proxy.Health, Observer: proxy.Attempts}
	err = run.Run(ctx, router.Plan(routing.Request{Route: route}), &spec, &c)
	var un *routing.Unavailable
	switch {
	case err == nil:
		return c.n, c.err
	case errors.Is(err, errCountFallback) || errors.As(err, &un):
		e := apierror.New(http.StatusServiceUnavailable, apierror.TypeUpstream, "upstream_unavailable",
			"no upstream provider of this model can count tokens now; retry after the time in Retry-After")
		e.RetryAfter = 1
		if un != nil {
			e.RetryAfter = un.RetryAfterSeconds()
		}
		return 0, e
	case ctx.Err() != nil:
		return 0, errCountUnreachable // the client left
	}
	return 0, err
}

// countOperation names a count's attempts in spans, logs and health.
const countOperation = "count_tokens"

// Errors of a count.
var (
	// errCountFallback ends a count whose first target is a fallback.
	errCountFallback = errors.New("no deployment of the model itself can take the count")
	// errCountUnreachable is a count that got no answer.
	errCountUnreachable = apierror.New(http.StatusBadGateway, apierror.TypeServer, "upstream_unreachable", "the provider's countTokens could not be reached")
)

// counting is one count's attempt: the upstream.Attempter of
// countUpstream.
type counting struct {
	transport http.RoundTripper
	log       *zap.Logger
	ctx       context.Context // the request's
	x         *translate.Exchange
	counter   *dialect.Counter
	// model and body are the countTokens request of the target
	// (Prepare).
	model string
	body  []byte
	// n is the count, err why there is none (Attempt).
	n   int64
	err error
}

var _ upstream.Attempter = (*counting)(nil)

// Prepare implements upstream.Attempter: the countTokens body for t's
// upstream model. A fallback target ends the count.
func (c *counting) Prepare(t *routing.Target) error {
	if t.Fallback {
		return errCountFallback
	}
	if t.Provider.Endpoint == nil {
		return apierror.Internal()
	}
	c.model = c.x.Model(t.UpstreamModel)
	gb, err := c.x.Body(t.UpstreamModel)
	if err != nil {
		return TranslationError(err)
	}
	c.body, err = c.counter.Body(gb, c.model)
	return err
}

// Attempt implements upstream.Attempter: it sends the count to t and
// reads the answer into c.n or c.err. The router learns from it as from
// any attempt (a connection error, a 5xx, a rejected key), except from a
// 429: countTokens has a quota of its own, so its throttling says nothing
// of the model's.
func (c *counting) Attempt(ctx context.Context, t *routing.Target, headers func() bool) upstream.End {
	p := t.Provider
	ctx, cancel := context.WithTimeout(ctx, cmp.Or(p.Timeout, countTimeout))
	defer cancel()
	start := time.Now()
	req, err := p.Endpoint.NewRequest(ctx, t.Attempt, c.model, false, c.body)
	if err == nil {
		path, ok := c.counter.Path(req.URL.Path)
		if !ok {
			headers()
			c.err = apierror.Internal()
			return upstream.End{Result: routing.AttemptCanceled, Err: c.err, Outcome: routing.Outcome{Canceled: true}, Uncounted: true}
		}
		req.URL.Path, req.URL.RawPath = path, ""
		telemetry.Inject(ctx, req.Header)
	} else {
		c.log.Error("building a countTokens request", zap.String("provider", p.Name), zap.Error(err))
	}
	var resp *http.Response
	if err == nil {
		resp, err = upstream.Send(c.transport, req)
	}
	inTime := headers()
	if err != nil || !inTime {
		if resp != nil {
			resp.Body.Close()
		}
		c.err = errCountUnreachable
		return c.unanswered(ctx, err, inTime)
	}
	defer resp.Body.Close()
	ttfb := time.Since(start)
	rb, err := io.ReadAll(io.LimitReader(resp.Body, maxCountBody))
	if err != nil {
		c.err = apierror.New(http.StatusBadGateway, apierror.TypeServer, "upstream_error", "the provider's countTokens answer was cut")
		return broken(resp.StatusCode, err)
	}
	if resp.StatusCode != http.StatusOK {
		return c.refused(p, resp, rb)
	}
	n, ok := c.counter.Read(rb)
	if !ok {
		c.err = apierror.New(http.StatusBadGateway, apierror.TypeServer, "upstream_error", "the provider's countTokens answer has no totalTokens")
		return broken(resp.StatusCode, c.err)
	}
	c.n = n
	return upstream.End{Result: routing.AttemptOK, Status: resp.StatusCode, Span: telemetry.Result{Status: resp.StatusCode},
		Outcome: routing.Outcome{Status: resp.StatusCode, TTFB: ttfb}, Delivered: true}
}

// unanswered is the end of an attempt that got no answer: err, or no
// headers within the try timeout (inTime false); a client that left is
// not the provider's failure.
func (c *counting) unanswered(ctx context.Context, err error, inTime bool) upstream.End {
	switch {
	case c.ctx.Err() != nil:
		return upstream.End{Result: routing.AttemptCanceled, Err: err, Span: telemetry.Result{Err: err, ErrorType: "canceled"},
			Outcome: routing.Outcome{Canceled: true}, Uncounted: true}
	case !inTime || errors.Is(err, context.DeadlineExceeded) || routing.TimedOut(ctx, err):
		return upstream.End{Result: routing.AttemptTimeout, Err: err, Span: telemetry.Result{Err: err, ErrorType: "timeout"},
			Outcome: routing.Outcome{Timeout: true}, Fault: true}
	}
	return upstream.End{Result: routing.AttemptConnectError, Err: err, Span: telemetry.Result{Err: err, ErrorType: "unavailable"},
		Outcome: routing.Outcome{Err: err}, Fault: true}
}

// broken is the end of an attempt whose answer of status came but could
// not be read (err).
func broken(status int, err error) upstream.End {
	return upstream.End{Result: routing.StatusResult(status), Status: status, Err: err,
		Span: telemetry.Result{Status: status, Err: err, ErrorType: "bad_answer"}, Outcome: routing.Outcome{Status: status, Broken: true}, Fault: true}
}

// refused reads the provider's refusal, rb, of the count into c.err: a
// *dialect.Error read by the protocol's counter, its refusal of the provider's
// credentials a 502.
func (c *counting) refused(p *providers.Provider, resp *http.Response, rb []byte) upstream.End {
	status := resp.StatusCode
	e := c.counter.Error(status, resp.Header, rb)
	end := upstream.End{Result: routing.StatusResult(status), Status: status, Err: fmt.Errorf("countTokens answered %d", status),
		Span:    telemetry.Result{Status: status, ErrorType: telemetry.StatusErrorType(status)},
		Outcome: routing.Outcome{Status: status, RetryAfter: e.RetryAfter}, Fault: status >= 500}
	if status == http.StatusTooManyRequests {
		end.Outcome, end.Uncounted = routing.Outcome{Canceled: true}, true
	}
	if e.Status == http.StatusUnauthorized || e.Status == http.StatusForbidden {
		// The gateway's credentials, not the client's key: a 502.
		c.log.Warn("countTokens upstream refused the provider's credentials", zap.String("provider", p.Name), zap.Int("status", e.Status))
		e = &dialect.Error{Status: http.StatusBadGateway, Kind: dialect.ErrServer, Message: "the provider refused the gateway's credentials"}
	}
	c.err = e
	return end
}
