package caddymodule

import (
	"cmp"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"go.uber.org/zap"

	"github.com/caddy-air/caddy-air/airmetrics"
	"github.com/caddy-air/caddy-air/apierror"
	"github.com/caddy-air/caddy-air/billing"
	"github.com/caddy-air/caddy-air/chatproxy"
	"github.com/caddy-air/caddy-air/dialect"
	"github.com/caddy-air/caddy-air/dialect/anthropic"
	"github.com/caddy-air/caddy-air/dialect/openai"
	"github.com/caddy-air/caddy-air/dialect/translate"
	"github.com/caddy-air/caddy-air/providers"
	"github.com/caddy-air/caddy-air/routing"
	"github.com/caddy-air/caddy-air/telemetry"
)

func init() {
	caddy.RegisterModule(Chat{})
	caddy.RegisterModule(Messages{})
	httpcaddyfile.RegisterHandlerDirective("air_chat", parseHandler[Chat])
	httpcaddyfile.RegisterHandlerDirective("air_messages", parseHandler[Messages])
	httpcaddyfile.RegisterDirectiveOrder("air_chat", httpcaddyfile.Before, "respond")
	httpcaddyfile.RegisterDirectiveOrder("air_messages", httpcaddyfile.Before, "respond")
}

// Chat is the `air_chat` handler: `POST /v1/chat/completions`, passed
// through to the provider that serves the model, byte for byte, with usage
// captured and settled in the ledger.
type Chat struct{ proxyHandler }

// Messages is the `air_messages` handler: `POST /v1/messages`, Anthropic's
// Messages API passed through the same way, with prompt-cache accounting.
type Messages struct{ proxyHandler }

// CaddyModule returns the Caddy module information.
func (Chat) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{ID: "http.handlers.air_chat", New: func() caddy.Module { return new(Chat) }}
}

// CaddyModule returns the Caddy module information.
func (Messages) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{ID: "http.handlers.air_messages", New: func() caddy.Module { return new(Messages) }}
}

// Provision sets the handler up for OpenAI chat completions.
func (h *Chat) Provision(ctx caddy.Context) error {
	return h.provision(ctx, protocolSpec{
		protocol: openai.Wire, endpoint: "chat", path: "/chat/completions",
		kind: providers.KindChat, inspect: openai.InspectChat, client: translate.Chat,
	})
}

// Provision sets the handler up for Anthropic messages.
func (h *Messages) Provision(ctx caddy.Context) error {
	return h.provision(ctx, protocolSpec{
		protocol: anthropic.Wire, endpoint: "messages", path: "/messages",
		kind: providers.KindMessages, inspect: anthropic.InspectMessages, client: translate.Messages,
	})
}

// protocolSpec is what differs between the chat and messages endpoints.
type protocolSpec struct {
	protocol dialect.Wire
	endpoint string // ledger endpoint name
	path     string // upstream path below the provider base URL
	kind     string // model kind this endpoint serves
	inspect  func(body []byte, maxDepth int) (dialect.Inspected, *apierror.Error)
	// noOutput marks an endpoint that generates no tokens (embeddings,
	// token counting): its admission reserves no output.
	noOutput bool
	// unbilled marks an endpoint whose requests leave no ledger record
	// (token counting); they still count against the rate limits.
	unbilled bool
	// count, when set, answers a token count for a model whose provider
	// does not speak Messages (countTokens), in place of the proxy.
	count func(h *proxyHandler, w http.ResponseWriter, r *http.Request, body []byte, in dialect.Inspected,
		route *providers.Route, reservation *billing.Reservation) error
	// client is the endpoint's protocol as package translate names it,
	// for the endpoints whose requests may be translated to a model of
	// the other protocol; "" for the others.
	client string
	// usage, when set, is the usage a request is billed on, in place of
	// the tokens the proxy tapped: for the endpoints billed by other
	// quantities (a moderation by request, speech by character).
	usage func(in dialect.Inspected, res *chatproxy.Result) (billing.Usage, billing.Source)
	// check, when set, refuses a request the model's route does not
	// allow, before admission (a speech format the model lacks).
	check func(in dialect.Inspected, route *providers.Route) *apierror.Error
	// binary marks an answer that is a file (chatproxy.Call.Binary).
	binary bool
	// multipart marks an endpoint whose requests are multipart forms
	// (openai.InspectTranscription), read up to maxBody bytes (0: the
	// app's max_request_body) and sent upstream with their own content
	// type, the model alias edited in place.
	multipart bool
	maxBody   int64
}

// proxyHandler is the shared body of Chat and Messages.
type proxyHandler struct {
	spec  protocolSpec
	app   *App
	proxy *chatproxy.Proxy
	log   *zap.Logger
}

func (h *proxyHandler) provision(ctx caddy.Context, spec protocolSpec) error {
	app, err := appFrom(ctx)
	if err != nil {
		return err
	}
	h.spec, h.app, h.log = spec, app, ctx.Logger()
	h.proxy = &chatproxy.Proxy{Transport: app.Transport(), Logger: h.log, MaxJSONDepth: app.MaxJSONDepth, Health: app.tracker,
		Router: app.router}
	if app.metrics != nil {
		h.proxy.Attempts = app.metrics
	}
	return nil
}

// ServeHTTP validates, admits, proxies and settles one request. Its
// ledger record is durable before the client gets the end of the answer
// (see chatproxy.Held).
func (h *proxyHandler) ServeHTTP(w http.ResponseWriter, r *http.Request, _ caddyhttp.Handler) error {
	arrived := time.Now()
	var mr *airmetrics.Route // the model's metrics, once routed
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		return h.refuse(w, r, mr, apierror.New(http.StatusMethodNotAllowed, apierror.TypeInvalidRequest, "method_not_allowed", "use POST on this endpoint"))
	}
	key, st, rt, aerr := h.app.caller(r)
	if aerr != nil {
		return h.refuse(w, r, mr, aerr)
	}
	rb, err := readBody(w, r, cmp.Or(h.spec.maxBody, h.app.MaxRequestBody))
	if err != nil {
		return h.refuse(w, r, mr, err)
	}
	// The buffer is used until the exchange ends, and by upstream requests
	// until their transports close them (Call.BodyPin).
	defer rb.release()
	body := rb.Bytes()
	rl := startRequestLog(st, h.app.reqlogs, r, key, body, arrived)
	w = rl.writer(w)
	in, aerr := h.inspect(r, body)
	if aerr != nil {
		return h.refuse(w, r, mr, aerr)
	}
	if aerr := allowModel(r, key, in.Model); aerr != nil {
		return h.refuse(w, r, mr, aerr)
	}
	rspan := telemetry.StartRoute(r.Context(), telemetry.Route{Operation: h.spec.endpoint, Model: in.Model})
	route, aerr := h.route(in.Model)
	if aerr != nil {
		telemetry.EndRoute(rspan, "", "", errorCode(aerr))
		return h.refuse(w, r, mr, aerr)
	}
	telemetry.EndRoute(rspan, route.Provider.Name, route.UpstreamModel, "")
	mr = h.app.metrics.Route(route.Pattern)
	if aerr := h.refuseStateful(body, in, route); aerr != nil {
		return h.refuse(w, r, mr, aerr)
	}
	if h.spec.check != nil {
		if aerr := h.spec.check(in, route); aerr != nil {
			return h.refuse(w, r, mr, aerr)
		}
	}
	pin, aerr := h.pinned(r.Context(), st, key, in, route)
	if aerr != nil {
		return h.refuse(w, r, mr, aerr)
	}
	// A model of the other protocol, or a fallback of it, is reached
	// through a translation (an attempt leg per target); the same
	// protocol alone passes through untouched.
	lg, aerr := h.legsFor(body, in, route)
	if aerr != nil {
		return h.refuse(w, r, mr, aerr)
	}
	var upstreamBody []byte
	var injected bool
	var rebody func(string) ([]byte, error)
	if lg == nil {
		upstreamBody, injected, rebody, err = h.prepare(rb, body, in, route)
	}
	if err != nil {
		return h.refuse(w, r, mr, apierror.InvalidRequest("", "could not prepare the request: "+err.Error()))
	}
	if aerr := st.guard.check(); aerr != nil {
		return h.refuse(w, r, mr, aerr)
	}
	subject := subjectOf(r, key)
	estimate := dialect.EstimateRequest(in, route.MaxOutputTokens)
	if h.spec.noOutput {
		estimate.Output = 0
	}
	if h.spec.unbilled {
		estimate = billing.Usage{} // only the request counts
	}
	reservation, aerr := rt.billing.Admit(r.Context(), subject, in.Model, estimate)
	if aerr != nil {
		return h.refuse(w, r, mr, aerr)
	}
	requestID := requestIDOf(w, r)
	start := time.Now().UTC()
	rec := billing.Record{
		ID:       requestID,
		Time:     start,
		Endpoint: h.spec.endpoint,
		User:     key.User,
		KeyID:    key.ID,
		Model:    in.Model,
		Provider: route.Provider.Name,
		// An interrupted request's record, from its intent, counts in
		// the team too.
		Team: subject.Team,
		Tags: subject.Tags,
	}
	intent := rec
	intent.Usage = dialect.EstimateRequest(in, 0)
	intent.Usage.Output = 0
	if h.spec.count != nil && wireOf(route) != translate.Messages {
		return h.spec.count(h, w, r, body, in, route, reservation)
	}
	if h.spec.unbilled {
		return h.serveUnbilled(w, r, reservation, upstreamBody, rebody, rb, in, route, injected, requestID)
	}
	if err := reservation.Intend(intent); err != nil {
		reservation.Release()
		h.log.Error("recording a request's intent", zap.String("request_id", requestID), zap.Error(err))
		return h.refuse(w, r, mr, errStorage)
	}
	if in.Stream {
		mr.StreamOpened()
		defer mr.StreamClosed()
	}
	var q airmetrics.Request
	if mr != nil {
		defer h.observe(mr, &q, arrived)
	}
	res := h.proxy.Serve(w, r, &chatproxy.Call{
		Wire:         h.spec.protocol,
		Operation:    h.spec.endpoint,
		Provider:     route.Provider,
		Path:         h.spec.path,
		Body:         upstreamBody,
		BodyPin:      rb,
		Inspected:    in,
		StripUsage:   injected,
		ClientHeader: r.Header,
		RequestID:    requestID,
		Client:       clientOf(r),
		Attempts:     pin,
		Route:        route,
		Tokens:       estimate.PromptTotal() + estimate.Output,
		BodyModel:    route.UpstreamModel,
		Rebody:       rebody,
		Leg:          lg.leg(w),
		Binary:       h.spec.binary,
		ContentType:  h.contentType(r),
	})
	defer res.Close()
	// No upstream request is made after Serve: the handler lets go of the
	// body now, so that it does not wait for the ledger with the answer
	// (requests still sending it hold their own pins).
	rb.release()
	if !res.Reached && !res.Wrote {
		// No upstream saw the request: nothing to bill.
		reservation.Release()
		logFields(r, zap.String("air_request_id", requestID), zap.String("air_model", in.Model), zap.String("air_outcome", res.Outcome))
		q.Outcome, q.Status, q.User, q.KeyID = metricsOutcome(res.Outcome), res.Status, key.User, key.ID
		return h.finishTranslated(r, &res, nil)
	}
	rec.Usage, rec.Source, rec.Status, rec.Outcome = res.Usage, res.Source, res.Status, res.Outcome
	if h.spec.usage != nil && res.Status < 400 {
		rec.Usage, rec.Source = h.spec.usage(in, &res)
	}
	rec.ServiceTier = res.ServiceTier
	servedBy(&rec, res.Target)
	if h.remember(r.Context(), st, rt, &rec, in, &res, reservation, rl != nil) {
		// A background response is billed once it is finished; its
		// reservation is held until then (responses.Hold). Its log keeps
		// the create's answer until the billing replaces it with the
		// final response (backgroundLogged).
		logFields(r, zap.String("air_request_id", requestID), zap.String("air_model", in.Model), zap.String("air_outcome", "deferred"))
		err = h.finishTranslated(r, &res, nil)
		rl.finish(st, requestID, rec.Team)
		return err
	}
	rec.DurationMillis = durationMillis(sinceStart(arrived))
	rec, err = reservation.SettleDurable(r.Context(), rec, ledgerWait)
	logFields(r,
		zap.String("air_request_id", requestID),
		zap.String("air_model", in.Model),
		zap.String("air_provider", rec.Provider),
		zap.String("air_deployment", rec.Deployment),
		zap.Int64("air_prompt_tokens", res.Usage.PromptTotal()),
		zap.Int64("air_output_tokens", res.Usage.Output),
		zap.String("air_usage_source", string(res.Source)),
		zap.String("air_cost", rec.Cost.String()),
		zap.String("air_outcome", rec.Outcome), // res.Outcome, or withheld
	)
	q = airmetrics.Request{
		Outcome: metricsOutcome(res.Outcome), Status: res.Status,
		Tokens: airmetrics.Tokens{Input: rec.Usage.Input, Output: rec.Usage.Output, CacheRead: rec.Usage.CacheRead,
			CacheCreation: rec.Usage.CacheCreation, Reasoning: rec.Usage.Reasoning},
		Currency: rec.Currency, CostNanos: int64(rec.Cost), Unpriced: rec.Unpriced, User: key.User, KeyID: key.ID,
	}
	if !res.FirstByte.IsZero() {
		q.FirstByte = res.FirstByte.Sub(arrived)
	}
	if err != nil && r.Context().Err() == nil {
		q.Status = http.StatusServiceUnavailable // finish answers ledger_unavailable
		h.log.Error("the ledger did not make a request's record durable in time; the client gets an error instead of the end of its answer",
			zap.String("request_id", requestID), zap.Error(err))
	}
	err = h.finishTranslated(r, &res, err)
	rl.finish(st, requestID, rec.Team)
	return err
}

// prepare makes the upstream body of the route's first deployment. A
// model served by one deployment and no fallback has its body edited in
// the pooled buffer; one with several keeps the client's bytes and gets
// rebody, which prepares the body of another deployment's model name.
func (h *proxyHandler) prepare(rb *requestBody, body []byte, in dialect.Inspected, route *providers.Route) (
	out []byte, injected bool, rebody func(string) ([]byte, error), err error) {
	proto := h.spec.protocol
	if h.spec.multipart {
		rebody = func(model string) ([]byte, error) { return openai.PrepareMultipart(body, in, model), nil }
		return openai.PrepareMultipart(body, in, route.UpstreamModel), false, rebody, nil
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
		rb.reserve(len(body) + room)
		body = rb.Bytes() // moved, even by a reserve that fell short
	}
	out, injected, err = dialect.PrepareBodyInPlace(proto, body, in, route.UpstreamModel)
	return out, injected, nil, err
}

// inspect validates a request's body: a multipart form, or JSON.
func (h *proxyHandler) inspect(r *http.Request, body []byte) (dialect.Inspected, *apierror.Error) {
	if h.spec.multipart {
		return openai.InspectTranscription(r.Header.Get("Content-Type"), body)
	}
	return h.spec.inspect(body, h.app.MaxJSONDepth)
}

// contentType is the upstream request's content type: the client's for a
// multipart form, whose boundary the body was written with.
func (h *proxyHandler) contentType(r *http.Request) string {
	if h.spec.multipart {
		return r.Header.Get("Content-Type")
	}
	return ""
}

// servedBy records in rec the deployment that answered, and the model
// that served it when it was a fallback.
func servedBy(rec *billing.Record, t *routing.Target) {
	if t == nil {
		return
	}
	rec.Provider, rec.Deployment = t.Provider.Name, t.Deployment()
	if t.Fallback {
		rec.ServedModel = t.Route.Pattern
	}
}

// refuse answers a request the gateway refuses by itself with err, as
// respondError does, and counts it in the metrics.
func (h *proxyHandler) refuse(w http.ResponseWriter, r *http.Request, mr *airmetrics.Route, err error) error {
	h.app.observeRefusal(w, r, mr, h.spec.endpoint, err)
	return respondError(w, r, err)
}

// observe records a request that reached the proxy, once it ended.
func (h *proxyHandler) observe(mr *airmetrics.Route, q *airmetrics.Request, start time.Time) {
	q.Duration, q.Endpoint = sinceStart(start), h.spec.endpoint
	mr.Observe(q)
}

// errStorage answers a request the ledger cannot record.
var errStorage = apierror.New(http.StatusServiceUnavailable, apierror.TypeServer, "storage_unavailable",
	"the gateway cannot record requests right now; retry shortly")

// finish writes the held end of a response: as it is once its record is
// durable (settled nil), or an error instead. An error status is also
// returned to Caddy, for its error log and handle_errors routes.
func (h *proxyHandler) finish(w http.ResponseWriter, r *http.Request, held *chatproxy.Held, settled error) error {
	if held == nil {
		return nil // the client left
	}
	if settled != nil {
		e := apierror.New(http.StatusServiceUnavailable, apierror.TypeServer, "ledger_unavailable",
			"the answer could not be recorded in time, so it is withheld; retry shortly")
		if !held.Fail(w, e) {
			panic(http.ErrAbortHandler)
		}
		return caddyhttp.Error(e.Status, e)
	}
	if held.Broken() {
		panic(http.ErrAbortHandler)
	}
	held.Release(w)
	if s := held.Status(); s >= 400 {
		return caddyhttp.Error(s, fmt.Errorf("%s upstream answered %d", h.spec.endpoint, s))
	}
	return nil
}

// route finds the provider for model and checks that this endpoint serves
// models of its kind.
func (h *proxyHandler) route(model string) (*providers.Route, *apierror.Error) {
	route, err := h.app.Routes().Lookup(model)
	if err != nil {
		return nil, apierror.NotFound("model_not_found", fmt.Sprintf("the model %q does not exist or is not served here", model)).WithParam("model")
	}
	if h.spec.count != nil && wireOf(route) != "" {
		return route, nil // counted for any chat or messages model
	}
	if providers.IsCloud(route.Provider.Protocol) && h.translator(route) == nil {
		return nil, apierror.InvalidRequest("model", fmt.Sprintf("the model %q is served by a %s provider, which this endpoint does not reach: use /v1/chat/completions, /v1/messages or /v1/responses", model, route.Provider.Protocol))
	}
	if route.Kind != h.spec.kind && h.translator(route) == nil {
		return nil, apierror.InvalidRequest("model", fmt.Sprintf("the model %q is %s model: use %s", model, withArticle(route.Kind), endpointFor(route.Kind)))
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

// withArticle is kind with its indefinite article: "an embedding", "a
// chat".
func withArticle(kind string) string {
	if kind != "" && strings.ContainsRune("aeiou", rune(kind[0])) {
		return "an " + kind
	}
	return "a " + kind
}

// endpointFor names the endpoint that serves a model kind.
func endpointFor(kind string) string {
	switch kind {
	case providers.KindMessages:
		return "POST /v1/messages"
	case providers.KindImage, providers.KindVideo:
		return "POST /v1/tasks"
	case providers.KindEmbedding:
		return "POST /v1/embeddings"
	case providers.KindModeration:
		return "POST /v1/moderations"
	case providers.KindSpeech:
		return "POST /v1/audio/speech"
	case providers.KindTranscription:
		return "POST /v1/audio/transcriptions"
	case providers.KindRerank:
		return "POST /v1/rerank"
	default:
		return "POST /v1/chat/completions"
	}
}

// newRequestID returns a fresh request id, "req_" and 96 random bits in
// hex. It names the request's ledger record and its log entries, and the
// access log shows it as air_request_id. The bits come from the runtime's
// ChaCha8 generator, which needs no system call: Caddy's
// {http.request.uuid}, used before, reads crypto/rand and rebuilds the
// access log's extra fields, about 2% of the gateway's CPU per streamed
// request. An id must be unique, not secret.
func newRequestID() string {
	var b [12]byte
	binary.LittleEndian.PutUint64(b[:8], rand.Uint64())
	binary.LittleEndian.PutUint32(b[8:], rand.Uint32())
	return "req_" + hex.EncodeToString(b[:])
}

// UnmarshalCaddyfile sets up the handler from Caddyfile tokens. Syntax:
//
//	air_chat [<matcher>]
//	air_messages [<matcher>]
//
// Providers and models are configured in the global `air` option.
func (h *proxyHandler) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	d.Next()
	if d.NextArg() {
		return d.ArgErr()
	}
	if d.NextBlock(0) {
		return d.Errf("%s takes no options; configure providers in the global air option", d.Val())
	}
	return nil
}

// Interface guards.
var (
	_ caddy.Provisioner           = (*Chat)(nil)
	_ caddy.Provisioner           = (*Messages)(nil)
	_ caddyhttp.MiddlewareHandler = (*Chat)(nil)
	_ caddyhttp.MiddlewareHandler = (*Messages)(nil)
	_ caddyfile.Unmarshaler       = (*Chat)(nil)
	_ caddyfile.Unmarshaler       = (*Messages)(nil)
)
