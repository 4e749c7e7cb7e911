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

// WireOf is the wire protocol a chat model of route is served in: a
// cloud provider's own (gemini, vertex), else Chat Completions for chat
// models and Messages for messages models; "" for the other kinds, which
// no translation reaches.
func WireOf(route *providers.Route) string {
	if p := route.Provider.Protocol; providers.IsCloud(p) {
		return p
	}
	switch route.Kind {
	case providers.KindChat:
		return translate.Chat
	case providers.KindMessages:
		return translate.Messages
	}
	return ""
}

// wire is the wire protocol route serves this endpoint's clients in:
// wireOf route, except that a chat model of an openai provider serves
// Responses clients in Responses, which OpenAI speaks as well (a chat
// model of another protocol, such as dashscope, speaks only Chat
// Completions).
func (e *Engine) wire(route *providers.Route) string {
	w := WireOf(route)
	if e.Endpoint.Client == translate.Responses && w == translate.Chat && route.Provider != nil &&
		route.Provider.Protocol == providers.ProtocolOpenAI {
		return translate.Responses
	}
	return w
}

// translator is the translation a request to route needs: nil when the
// endpoint's protocol is the route's (pass-through) or none exists.
func (e *Engine) translator(route *providers.Route) *translate.Translator {
	if e.Endpoint.Client == "" {
		return nil
	}
	wire := e.wire(route)
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

// legs are the translations of one request, by provider wire protocol,
// for a model (or a fallback of it) of another protocol than the client's.
type legs struct {
	e    *Engine
	body []byte
	in   dialect.Inspected
	x    map[string]*translate.Exchange
}

// legsFor decodes body for each protocol other than the client's among
// route and its fallbacks, or refuses it (a parameter one of them cannot
// honour, unless its model drops it). It returns nil when every target
// speaks the client's protocol and is reached at its base URL and path:
// the request then passes through as it is.
func (e *Engine) legsFor(body []byte, in dialect.Inspected, route *providers.Route) (*legs, *apierror.Error) {
	var lg *legs
	add := func(r *providers.Route) *apierror.Error {
		tr := e.translator(r)
		if tr == nil {
			// A provider of the client's protocol whose endpoint builds
			// its requests (azure): passed through, on a leg.
			if lg == nil && r.Provider.Endpoint != nil {
				lg = &legs{e: e, body: body, in: in, x: make(map[string]*translate.Exchange, 1)}
			}
			return nil
		}
		if lg == nil {
			lg = &legs{e: e, body: body, in: in, x: make(map[string]*translate.Exchange, 1)}
		}
		if _, ok := lg.x[tr.Provider]; ok {
			return nil
		}
		x, err := tr.Request(body, translate.Options{DropParams: r.DropParams, MaxTokens: r.MaxTokens})
		if err != nil {
			return TranslationError(err)
		}
		lg.x[tr.Provider] = x
		return nil
	}
	if aerr := add(route); aerr != nil {
		return nil, aerr
	}
	for _, f := range route.Fallbacks {
		if fr, err := e.Routes.Lookup(f); err == nil {
			if aerr := add(fr); aerr != nil {
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
		if x, ok := lg.x[lg.e.wire(t.Route)]; ok {
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
