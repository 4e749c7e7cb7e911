package billing

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// testPrices is the example price file, plus models that exercise
// cache multipliers, globs and rounding.
const testPrices = `{
  "currency": "USD",
  "models": {
    "qwen3-max": {
      "currency": "CNY",
      "tiers": [
        {"up_to": 32000, "input": "6", "output": "24"},
        {"up_to": 128000, "input": "10", "output": "40"},
        {"input": "15", "output": "60"}
      ],
      "cache": {"creation": "1.25", "read": "0.1"}
    },
    "claude-x": {"tiers": [{"input": 3, "output": 15}]},
    "claude-y": {"tiers": [{"input": "3", "output": "15"}], "cache": {"creation": "2", "read": "0.5"}},
    "tiny": {"tiers": [{"input": "0.0025", "output": "0.0035"}]},
    "gpt-image-1": {"image": "0.04"},
    "sora-2": {"video_second": "0.10"},
    "veo-*": {"video_task": "0.5"},
    "veo-3*": {"video_task": "0.75"},
    "veo-3-exact": {"video_task": 1}
  }
}`

func mustPrices(t testing.TB, src string) *PriceTable {
	t.Helper()
	pt, err := ParsePrices("prices.json", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return pt
}

func TestQuoteTiers(t *testing.T) {
	pt := mustPrices(t, testPrices)
	for i, tc := range []struct {
		model string
		u     Usage
		tier  int
		cost  Amount
	}{
		// The contract's example: 50K input, 2K output, second tier for both.
		// 50000×10/1e6 + 2000×40/1e6 = 0.5 + 0.08 CNY.
		{"qwen3-max", Usage{Input: 50_000, Output: 2_000}, 1, 580_000_000},
		{"qwen3-max", Usage{}, 0, 0},
		// Exactly up_to stays in the tier; one above moves to the next.
		{"qwen3-max", Usage{Input: 32_000, Output: 1_000}, 0, 192_000_000 + 24_000_000},
		{"qwen3-max", Usage{Input: 32_001, Output: 1_000}, 1, 320_010_000 + 40_000_000},
		{"qwen3-max", Usage{Input: 128_000}, 1, 1_280_000_000},
		{"qwen3-max", Usage{Input: 128_001}, 2, 1_920_015_000},
		// Cache tokens count towards the prompt total that selects the tier.
		{"qwen3-max", Usage{Input: 20_000, CacheRead: 20_000}, 1, 200_000_000 + 20_000_000},
		{"qwen3-max", Usage{Input: 1, CacheCreation: 32_000}, 1, 10_000 + 400_000_000},
		// Reasoning is part of Output and not billed on top of it.
		{"qwen3-max", Usage{Input: 1_000, Output: 1_000, Reasoning: 900}, 0, 6_000_000 + 24_000_000},
		// Negative counts (a normalizer bug) are not credited.
		{"qwen3-max", Usage{Input: -5, Output: 1_000}, 0, 24_000_000},
	} {
		q := pt.Quote(tc.model, tc.u)
		if !q.Priced || q.Tier != tc.tier || q.Cost != tc.cost || q.Currency != "CNY" {
			t.Errorf("Test %d: Quote(%s, %+v) = %+v, want tier %d cost %s CNY", i, tc.model, tc.u, q, tc.tier, tc.cost)
		}
	}
}

func TestQuoteCacheMultipliers(t *testing.T) {
	pt := mustPrices(t, testPrices)
	for i, tc := range []struct {
		model string
		u     Usage
		cost  Amount
	}{
		// Default multipliers: 1.25 and 0.1 of the $3 input price.
		{"claude-x", Usage{CacheCreation: 1_000_000}, 3_750_000_000},
		{"claude-x", Usage{CacheRead: 1_000_000}, 300_000_000},
		{"claude-x", Usage{Input: 1_000, CacheCreation: 2_000, CacheRead: 10_000, Output: 500}, 3_000_000 + 7_500_000 + 3_000_000 + 7_500_000},
		// Overridden: 2 and 0.5.
		{"claude-y", Usage{CacheCreation: 1_000_000}, 6_000_000_000},
		{"claude-y", Usage{CacheRead: 1_000_000}, 1_500_000_000},
	} {
		q := pt.Quote(tc.model, tc.u)
		if q.Cost != tc.cost || q.Currency != "USD" || q.Tier != 0 {
			t.Errorf("Test %d: Quote(%s, %+v) = %+v, want %s USD", i, tc.model, tc.u, q, tc.cost)
		}
	}
}

func TestQuoteRoundsOnceHalfEven(t *testing.T) {
	pt := mustPrices(t, testPrices)
	// "tiny" costs 2.5 nanos per input token and 3.5 per output token.
	for i, tc := range []struct {
		u    Usage
		cost Amount
	}{
		{Usage{Input: 1}, 2},               // 2.5 → 2 (to even)
		{Usage{Output: 1}, 4},              // 3.5 → 4 (to even)
		{Usage{Input: 1, Output: 1}, 6},    // 6.0, not 2 + 4 rounded apart
		{Usage{Input: 3}, 8},               // 7.5 → 8
		{Usage{Input: 1, CacheRead: 1}, 3}, // 2.5 + 0.25 = 2.75 → 3
	} {
		if q := pt.Quote("tiny", tc.u); q.Cost != tc.cost {
			t.Errorf("Test %d: Quote(tiny, %+v) = %d nanos, want %d", i, tc.u, q.Cost, tc.cost)
		}
	}
}

func TestQuoteUnpricedAndGlobs(t *testing.T) {
	pt := mustPrices(t, testPrices)
	if q := pt.Quote("no-such-model", Usage{Input: 1000}); q.Priced || q.Tier != -1 || q.Cost != 0 || q.Currency != "" {
		t.Errorf("unpriced model quoted %+v", q)
	}
	if pt.Priced("no-such-model") || !pt.Priced("veo-2") {
		t.Error("Priced is wrong")
	}
	for i, tc := range []struct {
		model string
		cost  Amount
	}{
		{"veo-2", 500_000_000},         // only veo-* matches
		{"veo-3-fast", 750_000_000},    // veo-3* is longer than veo-*
		{"veo-3-exact", 1_000_000_000}, // an exact id beats both globs
	} {
		q := pt.QuoteTask(tc.model, 0, 0)
		if !q.Priced || q.Tier != -1 || q.Cost != tc.cost || q.Currency != "USD" {
			t.Errorf("Test %d: QuoteTask(%s) = %+v, want %s", i, tc.model, q, tc.cost)
		}
	}
}

func TestQuoteRecordUnits(t *testing.T) {
	pt := mustPrices(t, testPrices)
	for i, tc := range []struct {
		rec  Record
		cost Amount
	}{
		{Record{Model: "gpt-image-1", Images: 3, Outcome: OutcomeOK}, 120_000_000},
		{Record{Model: "gpt-image-1", Images: 0, Outcome: OutcomeFailed}, 0},
		{Record{Model: "sora-2", VideoMillis: 8_000, Outcome: OutcomeOK}, 800_000_000},
		{Record{Model: "sora-2", VideoMillis: 4_250, Outcome: OutcomeOK}, 425_000_000},
		{Record{Model: "veo-2", Outcome: OutcomeOK}, 500_000_000},
		// A failed per-task video costs nothing.
		{Record{Model: "veo-2", Outcome: OutcomeFailed}, 0},
	} {
		q := pt.QuoteRecord(&tc.rec)
		if !q.Priced || q.Cost != tc.cost {
			t.Errorf("Test %d: QuoteRecord(%+v) = %+v, want %s", i, tc.rec, q, tc.cost)
		}
	}
}

// TestPricesExactNumbers checks that JSON numbers are read without going
// through float64: at 0.0011 per million, 55 tokens cost exactly 60.5 nanos,
// which rounds to even (60); float64 arithmetic gives 60.50000000000001
// and would round to 61.
func TestPricesExactNumbers(t *testing.T) {
	pt := mustPrices(t, `{"currency":"USD","models":{"m":{"tiers":[{"input":0.0011,"output":0}]}}}`)
	if q := pt.Quote("m", Usage{Input: 55}); q.Cost != 60 {
		t.Errorf("got %d nanos, want 60", q.Cost)
	}
}

func TestParsePricesErrors(t *testing.T) {
	for i, tc := range []struct {
		src  string
		want string
	}{
		{`{"models":{"qwen3-max":{"currency":"CNY","tiers":[{"up_to":32000,"input":"6","output":"24"},{"input":"abc","output":"1"}]}}}`,
			`prices.json: model "qwen3-max": tiers[1].input: "abc" is not a decimal number`},
		{`{"currency":"USD","models":{"m":{"tiers":[{"input":"-1","output":"1"}]}}}`,
			`prices.json: model "m": tiers[0].input: -1 is negative`},
		{`{"currency":"USD","models":{"m":{"tiers":[{"input":true,"output":"1"}]}}}`,
			`prices.json: model "m": tiers[0].input: must be a decimal string or number, got true`},
		{`{"currency":"USD","models":{"m":{"tiers":[{"up_to":100,"input":"1","output":"1"},{"up_to":100,"input":"1","output":"1"},{"input":"1","output":"1"}]}}}`,
			`prices.json: model "m": tiers[1].up_to: 100 is not above the previous tier's 100`},
		{`{"currency":"USD","models":{"m":{"tiers":[{"up_to":100,"input":"1","output":"1"},{"up_to":200,"input":"1","output":"1"}]}}}`,
			`prices.json: model "m": tiers[1].up_to: the last tier must be open-ended`},
		{`{"currency":"USD","models":{"m":{"tiers":[{"input":"1","output":"1"},{"input":"1","output":"1"}]}}}`,
			`prices.json: model "m": tiers[0].up_to: required on every tier but the last`},
		{`{"currency":"USD","models":{"m":{"tiers":[{"up_to":"100","input":"1","output":"1"},{"input":"1","output":"1"}]}}}`,
			`prices.json: model "m": tiers[0].up_to: must be a number of tokens`},
		{`{"currency":"USD","models":{"m":{"tiers":[{"up_to":1.5,"input":"1","output":"1"},{"input":"1","output":"1"}]}}}`,
			`prices.json: model "m": tiers[0].up_to: must be a positive whole number`},
		{`{"currency":"USD","models":{"m":{"tiers":[{"input":"1"}]}}}`,
			`prices.json: model "m": tiers[0].output: required`},
		{`{"currency":"USD","models":{"m":{"tiers":[{"input":"1","output":"1","inptu":"2"}]}}}`,
			`prices.json: model "m": tiers[0]: unknown field "inptu"`},
		{`{"currency":"USD","models":{"m":{"tiers":[]}}}`,
			`prices.json: model "m": tiers: must not be empty`},
		{`{"currency":"USD","models":{"m":{"tiers":[{"input":"1","output":"1"}],"cache":{"read":"x"}}}}`,
			`prices.json: model "m": cache.read: "x" is not a decimal number`},
		{`{"currency":"USD","models":{"m":{"image":"0.04","video_task":"1"}}}`,
			`prices.json: model "m": video_task: a model has at most one of`},
		{`{"currency":"USD","models":{"m":{"image":"lots"}}}`,
			`prices.json: model "m": image: "lots" is not a decimal number`},
		{`{"currency":"USD","models":{"m":{"video_second":"1e12"}}}`,
			`prices.json: model "m": video_second: 1e12 is implausibly large`},
		{`{"currency":"USD","models":{"m":{"price":"1"}}}`,
			`prices.json: model "m": unknown field "price"`},
		{`{"currency":"USD","models":{"m":{}}}`,
			`prices.json: model "m": no prices`},
		{`{"models":{"m":{"image":"1"}}}`,
			`prices.json: model "m": currency: not set here nor at the top level`},
		{`{"currency":"USD","models":{"m":{"currency":7,"image":"1"}}}`,
			`prices.json: model "m": currency: must be a non-empty string`},
		{`{"currency":"USD","models":{"veo-[":{"image":"1"}}}`,
			`prices.json: model "veo-[": invalid glob`},
		{`{"currency":"USD","models":{"m":{"image":"1"},"m":{"image":"2"}}}`,
			`prices.json: model "m": listed twice`},
		{`{"currency":"USD","modles":{}}`,
			`prices.json: unknown field "modles"`},
		{`{"currency":"USD"}`,
			`prices.json: models: must be an object`},
		{"{\"currency\":\"USD\",\n\"models\":{\"m\":}}",
			`prices.json: invalid JSON on line 2`},
		{"{\"currency\":\"USD\",\n\"models\":{\"m\":" + strings.Repeat("[", 1<<20),
			`prices.json: line 2: the file nests deeper than the limit of 128 levels`},
	} {
		_, err := ParsePrices("prices.json", []byte(tc.src))
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("Test %d: got error %v, want one starting with %q", i, err, tc.want)
		}
	}
}

func TestLoadPrices(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "prices.json")
	if err := os.WriteFile(good, []byte(testPrices), 0o600); err != nil {
		t.Fatal(err)
	}
	pt, err := LoadPrices(good)
	if err != nil {
		t.Fatal(err)
	}
	if pt.Currency() != "USD" || !pt.Priced("qwen3-max") {
		t.Errorf("loaded table: currency %q, qwen3-max priced %v", pt.Currency(), pt.Priced("qwen3-max"))
	}
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"currency":"USD","models":{"m":{"image":"x"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadPrices(bad); err == nil || !strings.HasPrefix(err.Error(), bad+`: model "m": image:`) {
		t.Errorf("bad file: %v", err)
	}
	if _, err := LoadPrices(filepath.Join(dir, "missing.json")); err == nil {
		t.Error("missing file loaded")
	}
}
