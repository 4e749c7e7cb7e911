package gateway

import (
	"net/http/httptest"
	"testing"

	"github.com/caddy-air/caddy-air/dialect"
	"github.com/caddy-air/caddy-air/dialect/openai"
	"github.com/caddy-air/caddy-air/dialect/translate"
	"github.com/caddy-air/caddy-air/providers"
	"github.com/caddy-air/caddy-air/routing"
	"github.com/tidwall/gjson"
)

// legsTable is a table of gpt (openai) falling back on two messages
// models of anthropic providers with their own max_output_tokens and
// drop_params, and a group of an anthropic and an openai deployment.
func legsTable(t *testing.T) *providers.Table {
	t.Helper()
	oa := &providers.Provider{Name: "oa", Protocol: providers.ProtocolOpenAI, BaseURLs: []string{"http://oa"}}
	a1 := &providers.Provider{Name: "a1", Protocol: providers.ProtocolAnthropic, BaseURLs: []string{"http://a1"}}
	a2 := &providers.Provider{Name: "a2", Protocol: providers.ProtocolAnthropic, BaseURLs: []string{"http://a2"}}
	tab, err := providers.NewTable([]*providers.Provider{oa, a1, a2}, []*providers.Route{
		{Pattern: "gpt", Provider: oa, Fallbacks: []string{"claude-small", "claude-big"}},
		{Pattern: "claude-small", Provider: a1, MaxOutputTokens: 111, MaxTokens: 111, DropParams: true},
		{Pattern: "claude-big", Provider: a2, MaxOutputTokens: 222, MaxTokens: 222},
	})
	if err != nil {
		t.Fatal(err)
	}
	return tab
}

// TestLegsPerRoute: two fallbacks of the same protocol each get their
// own translation: the second one's max_tokens and drop_params, not the
// first's.
func TestLegsPerRoute(t *testing.T) {
	tab := legsTable(t)
	e := &Engine{Endpoint: Endpoint{Wire: Wire{Protocol: openai.Wire}, Client: translate.Chat, Path: "/chat/completions"}, Routes: tab}
	route, _ := tab.Lookup("gpt")
	leg := func(lg *legs, model string) []byte {
		t.Helper()
		r, _ := tab.Lookup(model)
		l, err := lg.leg(httptest.NewRecorder())(&routing.Target{Route: r, Provider: r.Provider, UpstreamModel: model})
		if err != nil {
			t.Fatal(err)
		}
		return l.Body
	}
	body := []byte(`{"model":"gpt","messages":[{"role":"user","content":"hi"}]}`)
	lg, aerr := e.legsFor(body, dialect.Inspected{Model: "gpt"}, route)
	if aerr != nil {
		t.Fatal(aerr)
	}
	for model, want := range map[string]int64{"claude-small": 111, "claude-big": 222} {
		if got := gjson.GetBytes(leg(lg, model), "max_tokens").Int(); got != want {
			t.Errorf("%s: max_tokens %d, want %d", model, got, want)
		}
	}
	// seed: claude-big cannot honour it and does not drop it, so the
	// request is refused although claude-small drops it.
	body = []byte(`{"model":"gpt","seed":7,"messages":[{"role":"user","content":"hi"}]}`)
	if _, aerr := e.legsFor(body, dialect.Inspected{Model: "gpt"}, route); aerr == nil || aerr.Param == nil || *aerr.Param != "seed" {
		t.Errorf("seed: %v, want a 400 naming it", aerr)
	}
}
