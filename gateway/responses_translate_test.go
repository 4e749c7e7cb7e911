package gateway

import (
	"testing"

	"github.com/caddy-air/caddy-air/dialect"
	"github.com/caddy-air/caddy-air/dialect/openai"
	dresponses "github.com/caddy-air/caddy-air/dialect/responses"
	"github.com/caddy-air/caddy-air/dialect/translate"
	"github.com/caddy-air/caddy-air/providers"
)

// TestResponsesWire: a Responses request passes through to a chat model
// of an openai provider, and is translated to Messages for a messages
// model and to Chat Completions for a chat model of a dashscope
// provider; the stateful parameters are refused on a translated model
// only.
func TestResponsesWire(t *testing.T) {
	resp := &Engine{Endpoint: Endpoint{Wire: Wire{Protocol: dresponses.Wire}, Client: translate.Responses}}
	chat := &Engine{Endpoint: Endpoint{Wire: Wire{Protocol: openai.Wire}, Client: translate.Chat}}
	route := func(protocol, kind string) *providers.Route {
		return &providers.Route{Kind: kind, Provider: &providers.Provider{Name: "p", Protocol: protocol}}
	}
	for i, tc := range []struct {
		h             *Engine
		route         *providers.Route
		wire, provide string // provide: the translator's provider, "" for none
	}{
		{resp, route(providers.ProtocolOpenAI, providers.KindChat), translate.Responses, ""},
		{resp, route(providers.ProtocolAnthropic, providers.KindMessages), translate.Messages, translate.Messages},
		{resp, route(providers.ProtocolDashScope, providers.KindChat), translate.Chat, translate.Chat},
		{resp, route(providers.ProtocolDashScope, providers.KindImage), "", ""},
		{chat, route(providers.ProtocolDashScope, providers.KindChat), translate.Chat, ""},
		{chat, route(providers.ProtocolAnthropic, providers.KindMessages), translate.Messages, translate.Messages},
	} {
		tr := tc.h.translator(tc.route)
		provide := ""
		if tr != nil {
			provide = tr.Provider
		}
		if w := tc.h.wire(tc.route); w != tc.wire || provide != tc.provide {
			t.Errorf("Test %d: wire %q, translated to %q", i, w, provide)
		}
	}
	body := []byte(`{"model":"m","input":"q","conversation":"conv_1"}`)
	for i, tc := range []struct {
		route *providers.Route
		in    dialect.Inspected
		body  []byte
		param string
	}{
		{route(providers.ProtocolAnthropic, providers.KindMessages), dialect.Inspected{PreviousResponseID: "resp_1"}, nil, "previous_response_id"},
		{route(providers.ProtocolDashScope, providers.KindChat), dialect.Inspected{Background: true}, nil, "background"},
		{route(providers.ProtocolAnthropic, providers.KindMessages), dialect.Inspected{}, body, "conversation"},
		{route(providers.ProtocolAnthropic, providers.KindMessages), dialect.Inspected{}, []byte(`{"prompt":null}`), ""},
		{route(providers.ProtocolOpenAI, providers.KindChat), dialect.Inspected{PreviousResponseID: "resp_1", Background: true}, body, ""},
	} {
		param := ""
		if e := resp.refuseStateful(tc.body, tc.in, tc.route); e != nil {
			param = *e.Param
			if e.Status != 400 || *e.Code != "unsupported_parameter" {
				t.Errorf("Test %d: %+v", i, e)
			}
		}
		if param != tc.param {
			t.Errorf("Test %d: refused %q, want %q", i, param, tc.param)
		}
	}
}
