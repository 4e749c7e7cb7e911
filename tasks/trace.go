package tasks

import (
	"context"

	"github.com/tidwall/gjson"

	"github.com/caddy-air/caddy-air/apierror"
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
