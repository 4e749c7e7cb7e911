package billing

import (
	"strings"
	"testing"
)

// examplePrices loads the price file shipped with the quickstart, whose
// models these tests price.
func examplePrices(t testing.TB) *PriceTable {
	t.Helper()
	pt, err := LoadPrices("../prices.example.json")
	if err != nil {
		t.Fatal(err)
	}
	return pt
}

// TestQuotePriceRules prices the 2026 price rules with amounts worked out
// by hand from prices.example.json, in nanos of USD (1 USD = 1e9). A price
// of P per million tokens is P×1000 nanos per token.
func TestQuotePriceRules(t *testing.T) {
	pt := examplePrices(t)
	for i, tc := range []struct {
		name        string
		model       string
		u           Usage
		serviceTier string
		tier        int
		cost        Amount
	}{
		// mock-claude: input 3 (3000/token), output 15 (15000/token),
		// 5-minute writes 1.25× = 3750/token, 1-hour writes 2× = 6000/token.
		{"1h bucket", "mock-claude", Usage{Input: 1000, CacheCreation: 3000, CacheCreation1h: 2000, Output: 100}, "", 0,
			1000*3000 + 1000*3750 + 2000*6000 + 100*15000}, // 20,250,000
		{"5m writes only", "mock-claude", Usage{CacheCreation: 1000}, "", 0, 3_750_000},
		{"1h writes only", "mock-claude", Usage{CacheCreation: 1000, CacheCreation1h: 1000}, "", 0, 6_000_000},
		{"1h above the writes counts as writes", "mock-claude", Usage{CacheCreation: 1000, CacheCreation1h: 5000}, "", 0, 6_000_000},
		// mock-reasoner sets creation 1.25 but not creation_1h: the default 2×
		// of input 2 (2000/token) = 4000/token.
		{"default 1h multiplier", "mock-reasoner", Usage{CacheCreation: 1000, CacheCreation1h: 1000}, "", 0, 4_000_000},
		// Reasoning is part of output: 1000×2000 + 500×8000, nothing more.
		{"reasoning billed as output", "mock-reasoner", Usage{Input: 1000, Output: 500, Reasoning: 400}, "", 0, 6_000_000},
		// mock-long: 1.25/10 up to 272K prompt tokens, 2.50/15 above;
		// flex 0.5×, priority 2×.
		{"272K: at the threshold", "mock-long", Usage{Input: 272_000, Output: 1000}, "", 0, 340_000_000 + 10_000_000},
		{"272K: one above, whole request repriced", "mock-long", Usage{Input: 272_001, Output: 1000}, "", 1, 680_002_500 + 15_000_000},
		{"272K: cache reads count toward the threshold", "mock-long", Usage{Input: 200_000, CacheRead: 72_001, Output: 1000}, "", 1,
			200_000*2500 + 72_001*250 + 1000*15000}, // 533,000,250
		{"service tier flex", "mock-long", Usage{Input: 10_000, Output: 1000}, "flex", 0, (12_500_000 + 10_000_000) / 2},
		{"service tier priority", "mock-long", Usage{Input: 10_000, Output: 1000}, "priority", 0, (12_500_000 + 10_000_000) * 2},
		{"service tier default: plain price", "mock-long", Usage{Input: 10_000, Output: 1000}, "default", 0, 22_500_000},
		{"priority above 272K", "mock-long", Usage{Input: 272_001, Output: 1000}, "priority", 1, (680_002_500 + 15_000_000) * 2},
		{"anthropic priority 1.5×", "mock-claude", Usage{Input: 1000, Output: 100}, "priority", 0, 4_500_000 * 3 / 2},
		{"tier not listed for the model", "mock-claude", Usage{Input: 1000, Output: 100}, "flex", 0, 4_500_000},
		// mock-embed: 0.02 per million input tokens = 20/token; no output price.
		{"embedding", "mock-embed", Usage{Input: 12_345}, "", 0, 246_900},
		{"embedding ignores output", "mock-embed", Usage{Input: 100, Output: 5}, "", 0, 2000},
	} {
		q := pt.QuoteRecord(&Record{Model: tc.model, Usage: tc.u, ServiceTier: tc.serviceTier, Outcome: OutcomeOK})
		if !q.Priced || q.Tier != tc.tier || q.Cost != tc.cost || q.Currency != "USD" {
			t.Errorf("Test %d (%s): got %+v, want tier %d cost %d USD", i, tc.name, q, tc.tier, tc.cost)
		}
	}
}

// TestQuoteImagePrice prices images of an image model per image.
func TestQuoteImagePrice(t *testing.T) {
	pt := examplePrices(t)
	q := pt.QuoteRecord(&Record{Model: "mock-image", Images: 3, Outcome: OutcomeOK})
	if q.Cost != 3*40_000_000 {
		t.Fatalf("3 images at 0.04: got %+v", q)
	}
}

func TestParsePriceRulesErrors(t *testing.T) {
	for i, tc := range []struct{ model, want string }{
		{`{"embedding": "0.02", "tiers": [{"input": 1, "output": 1}]}`, "tiers or an embedding price"},
		{`{"embedding": "-1"}`, "embedding: -1 is negative"},
		{`{"tiers": [{"input": 1, "output": 1}], "service_tiers": {"flex": "x"}}`, `service_tiers.flex: "x" is not a decimal`},
		{`{"tiers": [{"input": 1, "output": 1}], "service_tiers": ["flex"]}`, "service_tiers: must be an object"},
		{`{"tiers": [{"input": 1, "output": 1}], "cache": {"creation_2h": 3}}`, `cache: unknown field "creation_2h"`},
		{`{"tiers": [{"input": 1, "output": 1}], "cache": {"creation_1h": "abc"}}`, "cache.creation_1h"},
	} {
		_, err := ParsePrices("p.json", []byte(`{"currency":"USD","models":{"m":`+tc.model+`}}`))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Test %d: got %v, want an error containing %q", i, err, tc.want)
		}
	}
}

// TestCreation1hOverride overrides the 1-hour multiplier per model.
func TestCreation1hOverride(t *testing.T) {
	pt := mustPrices(t, `{"currency":"USD","models":{"m":{"tiers":[{"input":"3","output":"15"}],"cache":{"creation_1h":"3"}}}}`)
	// 1000 1-hour writes × 3 × 3000 nanos.
	if q := pt.Quote("m", Usage{CacheCreation: 1000, CacheCreation1h: 1000}); q.Cost != 9_000_000 {
		t.Fatalf("got %d, want 9000000", q.Cost)
	}
}
