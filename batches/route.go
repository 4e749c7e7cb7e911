package batches

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"

	"github.com/caddy-air/caddy-air/apierror"
	"github.com/caddy-air/caddy-air/providers"
	"github.com/caddy-air/caddy-air/routing"
	"github.com/caddy-air/caddy-air/telemetry"
	"github.com/caddy-air/caddy-air/upstream"
)

// A batch's submission (the input's upload and the batch's create) goes
// where the router sends it, as a task's does: the first line's model's
// deployments, balanced, then its fallbacks, skipping upstreams in
// cooldown or whose breaker is open. An attempt that got no answer, or
// answered 429, 5xx, 401 or 402, moves on to the next one. The attempt
// that takes the batch is stored on it: the batch is polled, cancelled,
// downloaded and billed there.

// submit sends batch d, checked as p, upstream, attempt by attempt as the
// router plans them (upstream.Runner), and records on d the deployment
// that took it.
func (s *Service) submit(ctx context.Context, p *plan, d *doc) (*upBatch, *apierror.Error) {
	plan := s.router.Plan(routing.Request{Route: p.route, NonIdempotent: true})
	sub := submission{s: s, ctx: ctx, p: p, d: d}
	run := upstream.Runner{Logger: s.log}
	err := run.Run(ctx, plan, &upstream.Spec{Operation: "batch", Model: p.first, RequestID: d.ID}, &sub)
	switch {
	case err != nil:
		return nil, submitError(sub.last, err)
	case sub.last != nil:
		return nil, submitError(sub.last, nil)
	}
	return sub.up, nil
}

// submission is a batch's submissions: the upstream.Attempter of submit.
type submission struct {
	s   *Service
	ctx context.Context // the create's
	p   *plan
	d   *doc
	// upModels and models are the current attempt's (Prepare).
	upModels, models map[string]string
	// up is the batch as the upstream that took it answered; last is the
	// last attempt's error, when it failed.
	up   *upBatch
	last error
}

var _ upstream.Attempter = (*submission)(nil)

// Prepare implements upstream.Attempter: the models of the batch's lines
// on tg; a deployment or fallback that cannot take them is skipped.
func (sub *submission) Prepare(tg *routing.Target) error {
	upModels, models, ok := sub.p.on(tg)
	if !ok {
		return upstream.ErrSkip
	}
	sub.upModels, sub.models = upModels, models
	return nil
}

// Attempt implements upstream.Attempter: it uploads the input to tg and
// creates the batch there; on success it records tg on the batch.
func (sub *submission) Attempt(ctx context.Context, tg *routing.Target, headers func() bool) upstream.End {
	d := sub.d
	u := upTarget{provider: tg.Provider, base: strings.TrimRight(tg.Attempt.BaseURL, "/"), key: tg.Attempt.APIKey}
	up, err := sub.s.send(ctx, u, sub.upModels, d.InputFileID, d.Endpoint, d.CompletionWindow)
	headers()
	e := submitEnd(err)
	if err == nil {
		d.Provider, d.Deployment, d.Models = tg.Provider.Name, tg.Deployment(), sub.models
		d.BaseURL, d.Key = u.base, max(slices.Index(tg.Provider.APIKeys, u.key), 0)
		if tg.Fallback {
			d.ServedModel = tg.Route.Pattern
		}
		sub.up, sub.last = up, nil
		return e
	}
	sub.last = err
	e.Retry = resubmittable(err) && sub.ctx.Err() == nil
	return e
}

// on is the upstream model of each of the batch's client models on tg,
// and its reverse (upstream model → client model); false when tg cannot
// serve every line: a fallback that is not an OpenAI-protocol model of
// the batch's kind, or that would serve a batch of several models, or a
// deployment whose provider does not serve one of the other models.
func (p *plan) on(tg *routing.Target) (upModels, models map[string]string, ok bool) {
	upModels, models = map[string]string{}, map[string]string{}
	if tg.Provider.Protocol != providers.ProtocolOpenAI {
		return nil, nil, false
	}
	if tg.Fallback {
		if len(p.upstream) != 1 || tg.Route.Kind != p.route.Kind {
			return nil, nil, false
		}
		up := orElse(tg.UpstreamModel, tg.Route.Pattern)
		upModels[p.first], models[up] = up, p.first
		return upModels, models, true
	}
	for client, route := range p.routes {
		up := ""
		if client == p.first {
			up = orElse(tg.UpstreamModel, client)
		} else if up, ok = upstreamOn(route, tg.Provider, client); !ok {
			return nil, nil, false
		}
		upModels[client] = up
		if _, seen := models[up]; !seen || client == p.first {
			models[up] = client
		}
	}
	return upModels, models, true
}

// upstreamOn is the upstream model of client model route on provider p:
// that of route's first deployment there.
func upstreamOn(route *providers.Route, p *providers.Provider, client string) (string, bool) {
	for _, dep := range route.Deployments {
		if dep.Provider == p {
			return orElse(dep.UpstreamModel, client), true
		}
	}
	if route.Provider == p {
		return orElse(route.UpstreamModel, client), true
	}
	return "", false
}

// orElse is a, or b when a is empty.
func orElse(a, b string) string {
	if a == "" {
		return b
	}
	return a
}

// submitEnd is how a submission that ended with err ended, for the
// runner: what the router learns, the attempt's result, status and log.
func submitEnd(err error) upstream.End {
	var ue *upstreamError
	e := upstream.End{Err: err, Delivered: err == nil}
	switch {
	case err == nil:
		e.Result, e.Status = routing.AttemptOK, http.StatusOK
		e.Outcome = routing.Outcome{Status: http.StatusOK}
	case errors.As(err, &ue):
		e.Result, e.Status, e.Fault = routing.StatusResult(ue.status), ue.status, ue.status == http.StatusTooManyRequests || ue.status >= 500
		e.Outcome = routing.Outcome{Status: ue.status, RetryAfter: ue.retryAfter}
		e.Span.ErrorType = telemetry.StatusErrorType(ue.status)
	case errors.Is(err, context.DeadlineExceeded):
		e.Result, e.Fault, e.Span.ErrorType = routing.AttemptTimeout, true, "timeout"
		e.Outcome = routing.Outcome{Timeout: true}
	case errors.Is(err, context.Canceled):
		e.Result, e.Uncounted, e.Span.ErrorType = routing.AttemptCanceled, true, "canceled"
		e.Outcome = routing.Outcome{Canceled: true}
	default:
		e.Result, e.Fault, e.Span.ErrorType = routing.AttemptConnectError, true, "unavailable"
		e.Outcome = routing.Outcome{Err: err}
	}
	e.Span.Status, e.Span.Err = e.Status, err
	return e
}

// resubmittable reports whether a failed submission may go to the next
// attempt: it got no answer (not a timeout: the provider may have taken
// the batch), or an answer whose status routing retries.
func resubmittable(err error) bool {
	var ue *upstreamError
	if errors.As(err, &ue) {
		return routing.Retryable(ue.status)
	}
	return !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled)
}

// submitError is the client's error when no attempt took the batch: the
// last attempt's, or, when none was made, the router's.
func submitError(last, planErr error) *apierror.Error {
	if last == nil {
		var un *routing.Unavailable
		if errors.As(planErr, &un) {
			return apierror.New(http.StatusServiceUnavailable, apierror.TypeUpstream, "upstream_unavailable",
				"no upstream provider of this model could take the batch; retry later")
		}
		return apierror.New(http.StatusBadGateway, apierror.TypeUpstream, "upstream_error", "the batch was not submitted")
	}
	// The provider's own answer, scrubbed, reaches the client; how a
	// connection failed (addresses, ...) does not.
	msg := "the provider could not be reached"
	var ue *upstreamError
	if errors.As(last, &ue) {
		msg = ue.Error()
	}
	return apierror.New(http.StatusBadGateway, apierror.TypeUpstream, "upstream_error", "the provider did not accept the batch: "+msg)
}

// upstreamOf is where stored batch d is polled, cancelled and downloaded:
// the base URL and key that took it, when its provider still has them,
// else the provider's first; false when its provider is gone.
func (s *Service) upstreamOf(d *doc) (upTarget, bool) {
	p := s.routes.Provider(d.Provider)
	if p == nil {
		return upTarget{}, false
	}
	u := attempt(p)
	for _, b := range p.BaseURLs {
		if d.BaseURL != "" && strings.TrimRight(b, "/") == d.BaseURL {
			u.base = d.BaseURL
		}
	}
	if d.Key > 0 && d.Key < len(p.APIKeys) {
		u.key = p.APIKeys[d.Key]
	}
	return u, true
}
