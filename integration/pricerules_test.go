package integration

import (
	"io"
	"net/http"
	"net/url"
	"testing"

	"github.com/shopspring/decimal"
	"github.com/tidwall/gjson"
)

// rulesPrices prices the canned upstreams' models with the 2026 rules.
const rulesPrices = `{"currency":"USD","models":{
	"rules-claude":{"tiers":[{"input":"3","output":"15"}],"cache":{"creation":"1.25","creation_1h":"2"},"service_tiers":{"priority":"1.5"}},
	"rules-gpt":{"tiers":[{"input":"1.25","output":"10"}],"service_tiers":{"flex":"0.5","priority":"2"}},
	"rules-embed":{"embedding":"0.13"}}}`

// TestPriceRulesBilling bills, through the gateway, Anthropic 1-hour cache
// writes with priority service, OpenAI reasoning tokens with flex service,
// and an embedding; each record's cost is worked out here from the price
// inputs, and the usage report shows the 1-hour writes and the reasoning
// tokens apart.
func TestPriceRulesBilling(t *testing.T) {
	claude := newUpstream(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":"msg_1","type":"message","role":"assistant","model":"rules-claude","content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn","stop_sequence":null,`+
			`"usage":{"input_tokens":1000,"cache_creation_input_tokens":3000,"cache_read_input_tokens":0,"cache_creation":{"ephemeral_5m_input_tokens":1000,"ephemeral_1h_input_tokens":2000},"output_tokens":100,"service_tier":"priority"}}`)
	})
	gpt := newUpstream(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/v1/embeddings" {
			_, _ = io.WriteString(w, `{"object":"list","data":[{"object":"embedding","index":0,"embedding":"AAAAAA=="}],"model":"up-embed","usage":{"prompt_tokens":777,"total_tokens":777}}`)
			return
		}
		_, _ = io.WriteString(w, `{"id":"c","object":"chat.completion","created":1,"model":"rules-gpt","service_tier":"flex","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],`+
			`"usage":{"prompt_tokens":10000,"completion_tokens":1000,"total_tokens":11000,"completion_tokens_details":{"reasoning_tokens":600}}}`)
	})
	startGateway(t, gatewayOptions{
		Providers: providerBlock("rules-anthropic", "anthropic", "", claude) + "\n\t\t" + providerBlock("rules-openai", "openai", "", gpt),
		Models:    "model rules-claude rules-anthropic\n\t\tmodel rules-gpt rules-openai\n\t\tmodel rules-embed rules-openai up-embed {\n\t\t\tkind embedding\n\t\t}",
		Prices:    rulesPrices,
	})
	key, _ := createKey(t, "rules")
	if status, _, raw := call(t, http.MethodPost, "/v1/messages", key, `{"model":"rules-claude","max_tokens":10,"messages":[{"role":"user","content":"x"}]}`, "anthropic-version", "2023-06-01"); status != http.StatusOK {
		t.Fatalf("messages: %d %s", status, raw)
	}
	if status, _, raw := postChat(t, key, `{"model":"rules-gpt","messages":[{"role":"user","content":"x"}]}`); status != http.StatusOK {
		t.Fatalf("chat: %d %s", status, raw)
	}
	embedBody := `{"input": ["a", "b"], "model": "rules-embed", "encoding_format": "base64", "dimensions": 1}`
	if status, _, raw := call(t, http.MethodPost, "/v1/embeddings", key, embedBody); status != http.StatusOK || gjson.GetBytes(raw, "data.0.embedding").Str != "AAAAAA==" {
		t.Fatalf("embeddings: %d %s", status, raw)
	}
	// Only the model alias changed on the way up.
	if got, want := string(gpt.lastBody(t)), `{"input": ["a", "b"], "model": "up-embed", "encoding_format": "base64", "dimensions": 1}`; got != want {
		t.Fatalf("upstream embeddings body %s, want %s", got, want)
	}

	d := decimal.RequireFromString
	perM := func(n int64, price string) decimal.Decimal { return decimal.NewFromInt(n).Mul(d(price)) }
	million := decimal.NewFromInt(1_000_000)
	// 1000 input at 3, 1000 5-minute writes at 3×1.25, 2000 1-hour writes
	// at 3×2 and 100 output at 15, all ×1.5 for priority.
	claudeCost := perM(1000, "3").Add(perM(1000, "3").Mul(d("1.25"))).Add(perM(2000, "3").Mul(d("2"))).Add(perM(100, "15")).
		Mul(d("1.5")).Div(million)
	// 10000 input at 1.25 and 1000 output (600 of them reasoning) at 10, ×0.5 for flex.
	gptCost := perM(10000, "1.25").Add(perM(1000, "10")).Mul(d("0.5")).Div(million)
	embedCost := perM(777, "0.13").Div(million)

	byEndpoint := map[string]ledgerRecord{}
	for _, r := range waitLedger(t, "rules", 3) {
		byEndpoint[r.Endpoint] = r
	}
	for _, tc := range []struct {
		endpoint, tier string
		cost           decimal.Decimal
		ok             func(r ledgerRecord) bool
	}{
		{"messages", "priority", claudeCost, func(r ledgerRecord) bool {
			return r.Usage.CacheCreation == 3000 && r.Usage.CacheCreation1h == 2000 && r.Usage.Input == 1000
		}},
		{"chat", "flex", gptCost, func(r ledgerRecord) bool { return r.Usage.Output == 1000 && r.Usage.Reasoning == 600 }},
		{"embeddings", "", embedCost, func(r ledgerRecord) bool { return r.Usage.Input == 777 && r.Usage.Output == 0 }},
	} {
		r, found := byEndpoint[tc.endpoint]
		if !found || r.ServiceTier != tc.tier || !sameDecimal(r.Cost, tc.cost.String()) || !tc.ok(r) {
			t.Errorf("%s: record %+v, want service tier %q and cost %s", tc.endpoint, r, tc.tier, tc.cost)
		}
	}

	var rep struct {
		Totals []struct {
			Usage struct {
				CacheCreation1h int64 `json:"cache_creation_1h_tokens"`
				Reasoning       int64 `json:"reasoning_tokens"`
			} `json:"usage"`
			Cost string `json:"cost"`
		} `json:"totals"`
	}
	if status := adminJSON(t, http.MethodGet, "/air/usage?user="+url.QueryEscape("rules"), "", &rep); status != http.StatusOK || len(rep.Totals) != 1 {
		t.Fatalf("usage report: %d %+v", status, rep)
	}
	tot := rep.Totals[0]
	if tot.Usage.CacheCreation1h != 2000 || tot.Usage.Reasoning != 600 || !sameDecimal(tot.Cost, claudeCost.Add(gptCost).Add(embedCost).String()) {
		t.Fatalf("usage report totals %+v", tot)
	}
}
