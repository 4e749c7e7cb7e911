package integration

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/tidwall/gjson"
)

// rerankPrices prices the Jina-shaped mock per token and Cohere's per
// search unit.
const rerankPrices = `{"currency": "USD", "models": {
	"mock-rerank": {"tiers": [{"input": "0.02", "output": "0"}]},
	"rerank-v3.5": {"search_unit": "0.002"}
}}`

// cohereProvider is the mock as Cohere's v2 API.
const cohereProvider = `provider mock-cohere {
			protocol cohere
			base_url http://localhost:9080/mock/cohere/v2
			api_key mock-upstream-key
		}`

// TestRerankHTTP reranks with a plain HTTP client in the shape LiteLLM
// and New-API accept, through an openai provider (Jina's answer, billed
// by its reported tokens) and a cohere one (Cohere's answer, billed by
// its search units), each leaving one record; bad input is refused with
// the member at fault and no record.
func TestRerankHTTP(t *testing.T) {
	startGateway(t, gatewayOptions{Prices: rerankPrices, Providers: cohereProvider, Models: "model rerank-v3.5 mock-cohere"})
	key, _ := createKey(t, "rerank-http")
	before := scrapeMetrics(t)
	body := `{"model":%q,"query":"red fox","documents":["a brown dog","the red fox jumps",{"text":"a red car"}],"top_n":2,"return_documents":true}`

	status, _, out := call(t, http.MethodPost, "/v1/rerank", key, fmt.Sprintf(body, "mock-rerank"))
	res := gjson.ParseBytes(out)
	if status != http.StatusOK || res.Get("results.#").Int() != 2 || res.Get("results.0.index").Int() != 1 ||
		res.Get("results.0.relevance_score").Float() != 1 || res.Get("results.0.document.text").Str != "the red fox jumps" ||
		res.Get("results.1.index").Int() != 2 {
		t.Fatalf("jina shape: %d %s", status, out)
	}
	tokens := res.Get("usage.prompt_tokens").Int()
	rec := waitLedger(t, "rerank-http", 1)[0]
	if rec.Endpoint != "rerank" || rec.Model != "mock-rerank" || rec.Usage.Input != tokens || rec.Source != "reported" ||
		!sameDecimal(rec.Cost, perMillion(tokens, "0.02").String()) || len(rec.Unpriced) != 0 {
		t.Fatalf("record %+v, want %d tokens at 0.02 per million", rec, tokens)
	}

	// Cohere: documents as strings, its own answer shape, search units.
	status, _, out = call(t, http.MethodPost, "/v1/rerank", key,
		`{"model":"rerank-v3.5","query":"red fox","documents":["a brown dog","the red fox jumps"],"top_n":1}`)
	res = gjson.ParseBytes(out)
	if status != http.StatusOK || res.Get("results.#").Int() != 1 || res.Get("results.0.index").Int() != 1 ||
		res.Get("meta.billed_units.search_units").Int() != 1 {
		t.Fatalf("cohere shape: %d %s", status, out)
	}
	recs := waitLedger(t, "rerank-http", 2)
	if rec := recs[1]; rec.Model != "rerank-v3.5" || rec.Provider != "mock-cohere" || rec.Usage.SearchUnits != 1 || !sameDecimal(rec.Cost, "0.002") {
		t.Fatalf("cohere record %+v, want 1 search unit at 0.002", rec)
	}

	for _, c := range []struct{ body, param string }{
		{`{"model":"mock-rerank","documents":["a"]}`, "query"},
		{`{"model":"mock-rerank","query":"q"}`, "documents"},
		{`{"model":"mock-rerank","query":"q","documents":[]}`, "documents"},
		{`{"model":"mock-rerank","query":"q","documents":["a"],"documents":["b"]}`, "documents"},
		{`{"model":"mock-gpt","query":"q","documents":["a"]}`, "model"},
	} {
		status, _, out := call(t, http.MethodPost, "/v1/rerank", key, c.body)
		if e := decodeError(t, out); status != http.StatusBadRequest || e.Error.Param == nil || *e.Error.Param != c.param {
			t.Errorf("%s: %d %s, want 400 on %s", c.body, status, out, c.param)
		}
	}
	if recs := ledgerOf(t, "rerank-http"); len(recs) != 2 {
		t.Fatalf("%d records, want 2", len(recs))
	}
	// Counted in air_requests_total under their endpoint: two served, five
	// refused.
	after := scrapeMetrics(t)
	for outcome, want := range map[string]float64{"ok": 2, "rejected": 5} {
		sel := []string{`endpoint="rerank"`, `outcome="` + outcome + `"`}
		if got := after.sumOf("air_requests_total", sel...) - before.sumOf("air_requests_total", sel...); got != want {
			t.Errorf("air_requests_total{endpoint=rerank,outcome=%s} grew by %v, want %v", outcome, got, want)
		}
	}
}
