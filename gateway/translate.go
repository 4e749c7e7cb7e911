package gateway

import (
	"context"
	"errors"
	"net/http"

	"github.com/caddy-air/caddy-air/apierror"
	"github.com/caddy-air/caddy-air/chatproxy"
	"github.com/caddy-air/caddy-air/dialect"
	"github.com/caddy-air/caddy-air/dialect/anthropic"
	"github.com/caddy-air/caddy-air/dialect/openai"
	"github.com/caddy-air/caddy-air/dialect/translate"
	"github.com/caddy-air/caddy-air/providers"
	"github.com/caddy-air/caddy-air/routing"
)

// wireMessages is the Messages wire protocol.
const wireMessages = translate.Messages

// WireOf is the wire protocol a chat model of route is served in by its
// first deployment: wireTo route.Provider.
func WireOf(route *providers.Route) string { return wireTo(route, route.Provider) }

// wireTo is the wire protocol provider p, a deployment of route, serves
// route's chat model in: a cloud provider's own (gemini, vertex,
// bedrock), else Chat Completions for chat models and Messages for
// messages models; a deployment on another protocol than the first's
// (a mixed group) speaks its protocol's own: Messages for anthropic,
// Chat Completions for the others. "" for the other kinds, which no
// translation reaches.
func wireTo(route *providers.Route, p *providers.Provider) string {
	if providers.IsCloud(p.Protocol) {
		return p.Protocol
	}
	kind := route.Kind
	if p != route.Provider && p.Protocol != route.Provider.Protocol {
		kind = providers.KindChat
		if p.Protocol == providers.ProtocolAnthropic {
			kind = providers.KindMessages
		}
	}
	switch kind {
	case providers.KindChat:
		return translate.Chat
	case providers.KindMessages:
		return translate.Messages
	}
	return ""
}

// messagesOnly reports a chat model every deployment of which speaks
// Messages: a count_tokens request for it goes upstream; for any other
// (a mixed group among them) the endpoint's Count answers it.
func messagesOnly(route *providers.Route) bool {
	if WireOf(route) != wireMessages {
		return false
	}
	for _, d := range route.Deployments {
		if d.Provider != nil && wireTo(route, d.Provider) != wireMessages {
			return false
		}
	}
	return true
}

// wire is the wire protocol route serves this endpoint's clients in
// through its first deployment: wireFor route.Provider.
func (e *Engine) wire(route *providers.Route) string { return e.wireFor(route, route.Provider) }

// wireFor is the wire protocol provider p, a deployment of route, serves
// this endpoint's clients in: wireTo route p, except that an openai
// provider of a chat model serves Responses clients in Responses, which
// OpenAI speaks as well (a chat model of another protocol, such as
// dashscope, speaks only Chat Completions).
func (e *Engine) wireFor(route *providers.Route, p *providers.Provider) string {
	w := wireTo(route, p)
	if e.Endpoint.Client == translate.Responses && w == translate.Chat && p.Protocol == providers.ProtocolOpenAI {
		return translate.Responses
	}
	return w
}

// translator is the translation a request to route's first deployment
// needs: translatorFor route.Provider.
func (e *Engine) translator(route *providers.Route) *translate.Translator {
	if route.Provider == nil {
		return nil
	}
	return e.translatorFor(route, route.Provider)
}

// translatorFor is the translation a request to provider p, a
// deployment of route, needs: nil when the endpoint's protocol is the
// one p speaks (pass-through) or none exists.
func (e *Engine) translatorFor(route *providers.Route, p *providers.Provider) *translate.Translator {
	if e.Endpoint.Client == "" {
		return nil
	}
	wire := e.wireFor(route, p)
	if wire == "" || wire == e.Endpoint.Client {
		return nil
	}
	return translate.For(e.Endpoint.Client, wire)
}

// protocolOf is the proxy's protocol of a wire protocol, which selects
// the provider's auth headers and the usage format it taps.
func protocolOf(wire string) dialect.Wire {
	if wire == translate.Messages {
		return anthropic.Wire
	}
	return openai.Wire
}

// legs are the translations of one request, one per model (the
// request's, or a fallback) and provider wire protocol of its
// deployments other than the client's: each with that model's
// drop_params and max_output_tokens.
type legs struct {
	e    *Engine
	body []byte
	in   dialect.Inspected
	x    map[legKey]*translate.Exchange
}

// legKey names a leg: a model and the wire protocol of a deployment.
type legKey struct {
	route *providers.Route
	wire  string
}

// legsFor decodes body for each protocol other than the client's among
// the deployments of route and its fallbacks, or refuses it (a parameter
// one of them cannot honour, unless its model drops it). It returns nil
// when every target speaks the client's protocol and is reached at its
// base URL and path: the request then passes through as it is.
func (e *Engine) legsFor(body []byte, in dialect.Inspected, route *providers.Route) (*legs, *apierror.Error) {
	var lg *legs
	add := func(r *providers.Route, p *providers.Provider) *apierror.Error {
		tr := e.translatorFor(r, p)
		if tr == nil {
			// A provider of the client's protocol whose endpoint builds
			// its requests (azure): passed through, on a leg.
			if lg == nil && p.Endpoint != nil {
				lg = &legs{e: e, body: body, in: in, x: make(map[legKey]*translate.Exchange, 1)}
			}
			return nil
		}
		if lg == nil {
			lg = &legs{e: e, body: body, in: in, x: make(map[legKey]*translate.Exchange, 1)}
		}
		k := legKey{r, tr.Provider}
		if _, ok := lg.x[k]; ok {
			return nil
		}
		x, err := tr.Request(body, translate.Options{DropParams: r.DropParams, MaxTokens: r.MaxTokens})
		if err != nil {
			return TranslationError(err)
		}
		lg.x[k] = x
		return nil
	}
	addRoute := func(r *providers.Route) *apierror.Error {
		if aerr := add(r, r.Provider); aerr != nil {
			return aerr
		}
		for _, d := range r.Deployments {
			if d.Provider != nil && d.Provider != r.Provider {
				if aerr := add(r, d.Provider); aerr != nil {
					return aerr
				}
			}
		}
		return nil
	}
	if aerr := addRoute(route); aerr != nil {
		return nil, aerr
	}
	for _, f := range route.Fallbacks {
		if fr, err := e.Routes.Lookup(f); err == nil {
			if aerr := addRoute(fr); aerr != nil {
				return nil, aerr
			}
		}
	}
	return lg, nil
}

// TranslationError is the client's error for a request that cannot be
// translated.
func TranslationError(err error) *apierror.Error {
	var ue *translate.UnsupportedError
	if errors.As(err, &ue) {
		return apierror.New(http.StatusBadRequest, apierror.TypeInvalidRequest, "unsupported_parameter", err.Error()).WithParam(ue.Param)
	}
	return apierror.InvalidRequest("", "the request cannot be translated for this model's provider: "+err.Error())
}

// leg returns the chatproxy.Call.Leg of lg, whose translated answers go
// to w; nil (no legs: pass-through) when lg is nil.
func (lg *legs) leg(w http.ResponseWriter) func(*routing.Target) (*chatproxy.Leg, error) {
	if lg == nil {
		return nil
	}
	return func(t *routing.Target) (*chatproxy.Leg, error) {
		if x, ok := lg.x[legKey{t.Route, lg.e.wireFor(t.Route, t.Provider)}]; ok {
			b, err := x.Body(t.UpstreamModel)
			if err != nil {
				return nil, err
			}
			l := &chatproxy.Leg{Wire: protocolOf(x.Wire()), Path: x.Path(), Body: b, Writer: x.Writer(w), Transcode: x.Transcoder()}
			if ep := t.Provider.Endpoint; ep != nil {
				model, stream := x.Model(t.UpstreamModel), x.Stream()
				l.NewRequest = func(ctx context.Context, a providers.Attempt, body []byte) (*http.Request, error) {
					return ep.NewRequest(ctx, a, model, stream, body)
				}
			}
			return l, nil
		}
		b, injected, err := dialect.PrepareBody(lg.e.Endpoint.Wire.Protocol, lg.body, lg.in, t.UpstreamModel)
		if err != nil {
			return nil, err
		}
		l := &chatproxy.Leg{Wire: lg.e.Endpoint.Wire.Protocol, Path: lg.e.Endpoint.Path, Body: b, StripUsage: injected}
		if ep := t.Provider.Endpoint; ep != nil {
			model, stream := t.UpstreamModel, lg.in.Stream
			if model == "" {
				model = lg.in.Model
			}
			l.NewRequest = func(ctx context.Context, a providers.Attempt, body []byte) (*http.Request, error) {
				return ep.NewRequest(ctx, a, model, stream, body)
			}
		}
		return l, nil
	}
}
