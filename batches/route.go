package batches

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"

	"go.uber.org/zap"

	"github.com/caddy-air/caddy-air/apierror"
	"github.com/caddy-air/caddy-air/providers"
	"github.com/caddy-air/caddy-air/routing"
)

// A batch's submission (the input's upload and the batch's create) goes
// where the router sends it, as a task's does: the first line's model's
// deployments, balanced, then its fallbacks, skipping upstreams in
// cooldown or whose breaker is open. An attempt that got no answer, or
// answered 429, 5xx, 401 or 402, moves on to the next one. The attempt
// that takes the batch is stored on it: the batch is polled, cancelled,
// downloaded and billed there.

// submit sends batch d, checked as p, upstream, attempt by attempt as the
// router plans them, and records on d the deployment that took it.
func (s *Service) submit(ctx context.Context, p *plan, d *doc) (*upBatch, *apierror.Error) {
	plan := s.router.Plan(routing.Request{Route: p.route, NonIdempotent: true})
	var last error
	for {
		tg, err := plan.Next(ctx)
		if err != nil {
			return nil, submitError(last, err)
		}
		upModels, models, ok := p.on(tg)
		if !ok {
			// This deployment or fallback cannot take the batch's lines.
			tg.Done(routing.Outcome{Canceled: true})
			continue
		}
		u := upstream{provider: tg.Provider, base: strings.TrimRight(tg.Attempt.BaseURL, "/"), key: tg.Attempt.APIKey}
		up, err := s.send(ctx, u, upModels, d.InputFileID, d.Endpoint, d.CompletionWindow)
		tg.Done(outcome(err))
		if err == nil {
			d.Provider, d.Deployment, d.Models = tg.Provider.Name, tg.Deployment(), models
			d.BaseURL, d.Key = u.base, max(slices.Index(tg.Provider.APIKeys, u.key), 0)
			if tg.Fallback {
				d.ServedModel = tg.Route.Pattern
			}
			return up, nil
		}
		s.log.Warn("submitting a batch", zap.String("batch", d.ID), zap.String("deployment", tg.Deployment()), zap.Error(err))
		last = err
		if !resubmittable(err) || ctx.Err() != nil {
			return nil, submitError(err, nil)
		}
	}
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

// outcome is what the router learns of a submission that ended with err.
func outcome(err error) routing.Outcome {
	var ue *upstreamError
	switch {
	case err == nil:
		return routing.Outcome{Status: http.StatusOK}
	case errors.As(err, &ue):
		return routing.Outcome{Status: ue.status, RetryAfter: ue.retryAfter}
	case errors.Is(err, context.DeadlineExceeded):
		return routing.Outcome{Timeout: true}
	case errors.Is(err, context.Canceled):
		return routing.Outcome{Canceled: true}
	default:
		return routing.Outcome{Err: err}
	}
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
func (s *Service) upstreamOf(d *doc) (upstream, bool) {
	p := s.routes.Provider(d.Provider)
	if p == nil {
		return upstream{}, false
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
