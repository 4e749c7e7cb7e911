package tasks

import (
	"context"
	"errors"
	"net/http"

	"github.com/tidwall/gjson"
	"go.opentelemetry.io/otel/trace"

	"github.com/caddy-air/caddy-air/apierror"
	"github.com/caddy-air/caddy-air/providers"
	"github.com/caddy-air/caddy-air/telemetry"
)

// A create gets a routing span and a span per submission attempt when the
// request's span records (see package telemetry), and each attempt's
// result is counted in the provider's health (Config.Health).

// traceRoute records the routing of a create body: r when it parsed, or
// the refusal aerr.
func traceRoute(ctx context.Context, body []byte, r *request, aerr *apierror.Error) {
	if !telemetry.Recording(ctx) {
		return
	}
	if r == nil {
		span := telemetry.StartRoute(ctx, telemetry.Route{Operation: "tasks", Model: gjson.GetBytes(body, "model").Str})
		errType := aerr.Type
		if aerr.Code != nil {
			errType = *aerr.Code
		}
		telemetry.EndRoute(span, "", "", errType)
		return
	}
	span := telemetry.StartRoute(ctx, telemetry.Route{Operation: r.route.Kind, Model: r.model})
	telemetry.EndRoute(span, r.route.Provider.Name, r.route.UpstreamModel, "")
}

// startSubmit starts the span of submission attempt i (from 0) of t to a.
func startSubmit(ctx context.Context, t *Task, p *providers.Provider, a providers.Attempt, i int) (context.Context, trace.Span) {
	return telemetry.StartAttempt(ctx, telemetry.Attempt{
		Operation: t.Type, Provider: p.Name, Model: t.Model, Number: i + 1, BaseURL: a.BaseURL, RequestID: t.ID,
	})
}

// submitDone ends a submission attempt's span and counts its result: a
// failure unless it succeeded or the provider refused the request itself
// (a 4xx other than 429).
func (s *Service) submitDone(span trace.Span, p *providers.Provider, c *call, out *outcome, err error) {
	res := telemetry.Result{Status: c.status, Err: err}
	fault := false
	var ue *upstreamError
	switch {
	case err == nil:
		res.Outcome = out.state
	case errors.As(err, &ue) && ue.status == 0 && ue.name == errTimeout:
		res.ErrorType, fault = "timeout", true
	case errors.As(err, &ue) && ue.status == 0:
		res.ErrorType, fault = "unavailable", true
	case c.status >= 400:
		res.ErrorType = telemetry.StatusErrorType(c.status)
		fault = c.status == http.StatusTooManyRequests || c.status >= 500
	default:
		res.ErrorType, fault = "bad_answer", true
	}
	s.health.Record(p.Name, !fault)
	telemetry.EndAttempt(span, res)
}
