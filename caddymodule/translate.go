package caddymodule

import (
	"errors"
	"net/http"

	"github.com/caddy-air/caddy-air/apierror"
	"github.com/caddy-air/caddy-air/chatproxy"
	"github.com/caddy-air/caddy-air/dialect/translate"
	"github.com/caddy-air/caddy-air/providers"
)

// wireOf is the wire protocol a chat model of kind is served in: Chat
// Completions for chat models, Messages for messages models, "" for the
// other kinds, which no translation reaches.
func wireOf(kind string) string {
	switch kind {
	case providers.KindChat:
		return translate.Chat
	case providers.KindMessages:
		return translate.Messages
	}
	return ""
}

// translator is the translation a request to route needs: nil when the
// endpoint's protocol is the route's (pass-through) or none exists.
func (h *proxyHandler) translator(route *providers.Route) *translate.Translator {
	if h.spec.client == "" {
		return nil
	}
	wire := wireOf(route.Kind)
	if wire == "" || wire == h.spec.client {
		return nil
	}
	return translate.For(h.spec.client, wire)
}

// translated decodes a request for translation to route, or refuses it.
func (h *proxyHandler) translated(tr *translate.Translator, body []byte, route *providers.Route) (*translate.Exchange, *apierror.Error) {
	x, err := tr.Request(body, translate.Options{DropParams: route.DropParams, MaxTokens: route.MaxTokens})
	if err == nil {
		return x, nil
	}
	var ue *translate.UnsupportedError
	if errors.As(err, &ue) {
		return nil, apierror.New(http.StatusBadRequest, apierror.TypeInvalidRequest, "unsupported_parameter", err.Error()).WithParam(ue.Param)
	}
	return nil, apierror.InvalidRequest("", "the request cannot be translated for this model's provider: "+err.Error())
}

// protocolOf is the proxy's protocol of a wire protocol, which selects
// the provider's auth headers and the usage format it taps.
func protocolOf(wire string) chatproxy.Protocol {
	if wire == translate.Messages {
		return chatproxy.Anthropic
	}
	return chatproxy.OpenAI
}

// prepareTranslated makes the provider's body for the route's first
// deployment, and rebody for the others.
func prepareTranslated(x *translate.Exchange, route *providers.Route) (out []byte, rebody func(string) ([]byte, error), err error) {
	if len(route.Deployments) > 1 || len(route.Fallbacks) > 0 {
		rebody = x.Body
	}
	out, err = x.Body(route.UpstreamModel)
	return out, rebody, err
}

// finishTranslated ends the answer as finish does, then, for a translated
// one, writes its translated end (tw nil: passed through).
func (h *proxyHandler) finishTranslated(w http.ResponseWriter, tw *translate.Writer, r *http.Request, held *chatproxy.Held, settled error) error {
	err := h.finish(w, r, held, settled)
	if tw != nil {
		tw.Close()
	}
	return err
}
