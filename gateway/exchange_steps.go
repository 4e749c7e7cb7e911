package gateway

import (
	"cmp"
	"fmt"
	"net/http"
	"time"

	"go.uber.org/zap"

	"github.com/caddy-air/caddy-air/apierror"
	"github.com/caddy-air/caddy-air/billing"
	"github.com/caddy-air/caddy-air/chatproxy"
	"github.com/caddy-air/caddy-air/dialect"
	"github.com/caddy-air/caddy-air/keys"
	"github.com/caddy-air/caddy-air/providers"
	"github.com/caddy-air/caddy-air/teams"
	"github.com/caddy-air/caddy-air/telemetry"
)

// errMethod answers a request of another method than POST.
var errMethod = apierror.New(http.StatusMethodNotAllowed, apierror.TypeInvalidRequest, "method_not_allowed", "use POST on this endpoint")

// ErrStorage answers a request the ledger cannot record.
var ErrStorage = apierror.New(http.StatusServiceUnavailable, apierror.TypeServer, "storage_unavailable",
	"the gateway cannot record requests right now; retry shortly")

// authenticate checks the body's content type against the endpoint's
// body policy and the method, and finds the caller and its services.
func (x *Exchange) authenticate() error {
	if aerr := CheckContentType(x.R, x.e.Endpoint.Body.Multipart != nil); aerr != nil {
		return x.Refuse(aerr)
	}
	if x.R.Method != http.MethodPost {
		x.W.Header().Set("Allow", http.MethodPost)
		return x.Refuse(errMethod)
	}
	d, aerr := x.e.Host.Caller(x.R)
	if aerr != nil {
		return x.Refuse(aerr)
	}
	x.Deps = d
	return nil
}

// read reads the body into a pooled buffer, and starts the request log.
// The buffer is used until the exchange ends, and by upstream requests
// until their transports close them (Call.BodyPin).
func (x *Exchange) read() error {
	rb, err := x.e.Host.ReadBody(x.W, x.R, cmp.Or(x.e.Endpoint.Body.MaxBody, x.e.MaxRequestBody))
	if err != nil {
		return x.Refuse(err)
	}
	x.Body = rb
	if x.log = x.e.Host.StartLog(x.R, &x.Deps, rb.Bytes(), x.Arrived); x.log != nil {
		x.W = x.log.Writer(x.W)
	}
	return nil
}

// inspect validates the body, a multipart form or JSON, and checks that
// the key may use its model.
func (x *Exchange) inspect() error {
	var aerr *apierror.Error
	if form := x.e.Endpoint.Body.Multipart; form != nil {
		x.In, aerr = form.Inspect(x.R.Header.Get("Content-Type"), x.Body.Bytes())
	} else {
		x.In, aerr = x.e.Endpoint.Wire.Inspect(x.Body.Bytes(), x.e.MaxJSONDepth)
	}
	if aerr != nil {
		return x.Refuse(aerr)
	}
	if aerr := AllowModel(x.Deps.Key, x.Deps.Team, x.In.Model); aerr != nil {
		return x.Refuse(aerr)
	}
	return nil
}

// AllowModel refuses a request of key for a model outside the key's
// scope, or its team's: 403 model_not_allowed (permission_error in
// Anthropic's shape).
func AllowModel(key *keys.Key, team *teams.Team, model string) *apierror.Error {
	if key.Allows(model) && team.Allows(model) {
		return nil
	}
	return apierror.New(http.StatusForbidden, apierror.TypePermission, "model_not_allowed", (&keys.ErrModelNotAllowed{Model: model}).Error()).WithParam("model")
}

// route finds the model's route (in a routing span), and what the
// request needs of it: no stateful feature it lacks, the endpoint's
// check, pinned attempts, translations for the targets of another
// protocol, and the upstream body.
func (x *Exchange) route() error {
	rspan := telemetry.StartRoute(x.R.Context(), telemetry.Route{Operation: x.e.Endpoint.Name, Model: x.In.Model})
	route, aerr := x.e.lookup(x.In.Model)
	if aerr != nil {
		telemetry.EndRoute(rspan, "", "", errorCode(aerr))
		return x.Refuse(aerr)
	}
	telemetry.EndRoute(rspan, route.Provider.Name, route.UpstreamModel, "")
	x.Route, x.Metrics = route, x.e.Metrics.Route(route.Pattern)
	if aerr := x.e.refuseStateful(x.Body.Bytes(), x.In, route); aerr != nil {
		return x.Refuse(aerr)
	}
	if check := x.e.Endpoint.Check; check != nil {
		if aerr := check(x.In, route); aerr != nil {
			return x.Refuse(aerr)
		}
	}
	if pin := x.e.Endpoint.Pin; pin != nil {
		if x.attempts, aerr = pin(x); aerr != nil {
			return x.Refuse(aerr)
		}
	}
	// A model of the other protocol, or a fallback of it, is reached
	// through a translation (an attempt leg per target); the same
	// protocol alone passes through untouched.
	if x.legs, aerr = x.e.legsFor(x.Body.Bytes(), x.In, route); aerr != nil {
		return x.Refuse(aerr)
	}
	if x.legs == nil {
		var err error
		if x.upstreamBody, x.injected, x.rebody, err = x.prepare(); err != nil {
			return x.Refuse(apierror.InvalidRequest("", "could not prepare the request: "+err.Error()))
		}
	}
	return nil
}

// lookup finds the provider for model and checks that the endpoint
// serves models of its kind.
func (e *Engine) lookup(model string) (*providers.Route, *apierror.Error) {
	route, err := e.Routes.Lookup(model)
	if err != nil {
		return nil, apierror.NotFound("model_not_found", fmt.Sprintf("the model %q does not exist or is not served here", model)).WithParam("model")
	}
	if e.Endpoint.Count != nil && WireOf(route) != "" {
		return route, nil // counted for any chat or messages model
	}
	if providers.IsCloud(route.Provider.Protocol) && e.translator(route) == nil {
		return nil, apierror.InvalidRequest("model", fmt.Sprintf("the model %q is served by a %s provider, which this endpoint does not reach: use /v1/chat/completions, /v1/messages or /v1/responses", model, route.Provider.Protocol))
	}
	if route.Kind != e.Endpoint.Kind && e.translator(route) == nil {
		return nil, apierror.InvalidRequest("model", fmt.Sprintf("the model %q is %s model: use %s", model, WithArticle(route.Kind), EndpointFor(route.Kind)))
	}
	return route, nil
}

// errorCode is an API error's code, or its type when it has none.
func errorCode(e *apierror.Error) string {
	if e.Code != nil {
		return *e.Code
	}
	return e.Type
}

// prepare makes the upstream body of the route's first deployment. A
// model served by one deployment and no fallback has its body edited in
// the pooled buffer; one with several keeps the client's bytes and gets
// rebody, which prepares the body of another deployment's model name.
func (x *Exchange) prepare() (out []byte, injected bool, rebody func(string) ([]byte, error), err error) {
	proto, body, in, route := x.e.Endpoint.Wire.Protocol, x.Body.Bytes(), x.In, x.Route
	if form := x.e.Endpoint.Body.Multipart; form != nil {
		rebody = func(model string) ([]byte, error) { return form.Prepare(body, in, model), nil }
		return form.Prepare(body, in, route.UpstreamModel), false, rebody, nil
	}
	if len(route.Deployments) > 1 || len(route.Fallbacks) > 0 {
		rebody = func(model string) ([]byte, error) {
			b, _, err := dialect.PrepareBody(proto, body, in, model)
			return b, err
		}
		out, injected, err = dialect.PrepareBody(proto, body, in, route.UpstreamModel)
		return out, injected, rebody, err
	}
	// The edits are made in the pooled buffer; a body that nearly fills
	// its size class moves to the next one first. (If the budget cannot
	// cover that, PrepareBodyInPlace allocates the edited body.)
	if room := dialect.PrepareBodyRoom(proto, in, route.UpstreamModel); len(body)+room > cap(body) {
		x.Body.Reserve(len(body) + room)
		body = x.Body.Bytes() // moved, even by a reserve that fell short
	}
	out, injected, err = dialect.PrepareBodyInPlace(proto, body, in, route.UpstreamModel)
	return out, injected, nil, err
}

// admit checks the storage, reserves the request's estimate of the
// budgets and rate limits, and names the request and its record.
func (x *Exchange) admit() error {
	if aerr := x.Deps.Shared.Guard.Check(); aerr != nil {
		return x.Refuse(aerr)
	}
	x.estimate = dialect.EstimateRequest(x.In, x.Route.MaxOutputTokens)
	if x.e.Endpoint.Billing.NoOutput {
		x.estimate.Output = 0
	}
	if x.e.Endpoint.Billing.Mode == Unbilled {
		x.estimate = billing.Usage{} // only the request counts
	}
	subject := x.Deps.Subject
	reservation, aerr := x.Deps.Services.Billing.Admit(x.R.Context(), subject, x.In.Model, x.estimate)
	if aerr != nil {
		return x.Refuse(aerr)
	}
	x.Reservation = reservation
	x.RequestID = x.e.Host.RequestID(x.W, x.R)
	x.Record = billing.Record{
		ID:       x.RequestID,
		Time:     time.Now().UTC(),
		Endpoint: x.e.Endpoint.Name,
		User:     x.Deps.Key.User,
		KeyID:    x.Deps.Key.ID,
		Model:    x.In.Model,
		Provider: x.Route.Provider.Name,
		// An interrupted request's record, from its intent, counts in
		// the team too.
		Team: subject.Team,
		Tags: subject.Tags,
	}
	return nil
}

// intend writes the request's intent (its record before the upstream is
// asked), which an interrupted exchange leaves in the ledger, and starts
// the request's metrics.
func (x *Exchange) intend() error {
	intent := x.Record
	intent.Usage = dialect.EstimateRequest(x.In, 0)
	intent.Usage.Output = 0
	if err := x.Reservation.Intend(intent); err != nil {
		x.Reservation.Release()
		x.e.Log.Error("recording a request's intent", zap.String("request_id", x.RequestID), zap.Error(err))
		return x.Refuse(ErrStorage)
	}
	if x.In.Stream {
		x.Metrics.StreamOpened()
		x.stream = true
	}
	x.observed = x.Metrics != nil
	return nil
}

// call is the upstream call of the exchange, as both its billed (proxy)
// and unbilled (serveUnbilled) paths send it.
func (x *Exchange) call() *chatproxy.Call {
	ep, route := &x.e.Endpoint, x.Route
	return &chatproxy.Call{
		Wire:         ep.Wire.Protocol,
		Operation:    ep.Name,
		Provider:     route.Provider,
		Path:         ep.Path,
		Body:         x.upstreamBody,
		BodyPin:      x.Body,
		Inspected:    x.In,
		StripUsage:   x.injected,
		ClientHeader: x.R.Header,
		RequestID:    x.RequestID,
		Client:       x.Deps.Key.User,
		Route:        route,
		BodyModel:    route.UpstreamModel,
		Rebody:       x.rebody,
	}
}

// proxy makes the upstream attempts, relaying the answer but its held
// end.
func (x *Exchange) proxy() {
	ep := &x.e.Endpoint
	contentType := ""
	if ep.Body.Multipart != nil {
		// The client's, whose boundary the body was written with.
		contentType = x.R.Header.Get("Content-Type")
	}
	call := x.call()
	call.Attempts = x.attempts
	call.Tokens = x.estimate.PromptTotal() + x.estimate.Output
	call.Leg = x.legs.leg(x.W)
	call.Binary = ep.Body.Binary
	call.ContentType = contentType
	x.Result = x.e.Proxy.Serve(x.W, x.R, call)
	x.proxied = true
	// No upstream request is made after Serve: the handler lets go of the
	// body now, so that it does not wait for the ledger with the answer
	// (requests still sending it hold their own pins).
	x.Body.Release()
}
