package routing

import (
	"testing"
	"time"

	"github.com/caddy-air/caddy-air/internal/fakeclock"
	"github.com/caddy-air/caddy-air/providers"
)

// TestMixedGroup: a model whose deployments are on an anthropic and an
// openai provider is balanced over both, each target naming its own
// provider and upstream model; a 429 on the anthropic one moves the
// request to the openai one.
func TestMixedGroup(t *testing.T) {
	an := &providers.Provider{Name: "an", Protocol: providers.ProtocolAnthropic, BaseURLs: []string{"http://an"}, APIKeys: []string{"k"}, Retries: 1}
	oa := &providers.Provider{Name: "oa", Protocol: providers.ProtocolOpenAI, BaseURLs: []string{"http://oa"}, APIKeys: []string{"k"}, Retries: 1}
	m := &providers.Route{Pattern: "m", Policy: providers.PolicyRoundRobin, Deployments: []*providers.Deployment{
		{Provider: an, UpstreamModel: "claude"}, {Provider: oa, UpstreamModel: "gpt"},
	}}
	tbl, err := providers.NewTable([]*providers.Provider{an, oa}, []*providers.Route{m})
	if err != nil {
		t.Fatal(err)
	}
	clock := fakeclock.New(time.Unix(1_700_000_000, 0))
	r := New(Config{Table: tbl, Now: clock.Now, Sleep: func(_ <-chan struct{}, d time.Duration) bool { clock.Advance(d); return true }})
	served := map[string]string{}
	for range 4 {
		tg := next(t, r.Plan(Request{Route: m}))
		if prev, ok := served[tg.Provider.Name]; ok && prev != tg.UpstreamModel {
			t.Fatalf("%s served as %s and %s", tg.Provider.Name, prev, tg.UpstreamModel)
		}
		served[tg.Provider.Name] = tg.UpstreamModel
		tg.Done(Outcome{Status: 200})
	}
	if served["an"] != "claude" || served["oa"] != "gpt" {
		t.Fatalf("served %v: want both deployments with their upstream models", served)
	}
	p := r.Plan(Request{Route: m})
	tg := next(t, p)
	if tg.Provider.Name != "an" {
		tg.Done(Outcome{Status: 200})
		p = r.Plan(Request{Route: m})
		tg = next(t, p)
	}
	if tg.Provider.Name != "an" {
		t.Fatalf("round robin did not come back to an: %s", tg.Provider.Name)
	}
	tg.Done(Outcome{Status: 429, RetryAfter: 30 * time.Second})
	if tg = next(t, p); tg.Provider.Name != "oa" || tg.UpstreamModel != "gpt" || tg.Route != m {
		t.Errorf("after a 429: %s/%s", tg.Provider.Name, tg.UpstreamModel)
	}
}
