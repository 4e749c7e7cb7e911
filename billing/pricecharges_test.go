package billing

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestQuoteCharges prices audio and image tokens and tool calls with
// amounts worked out by hand from prices.example.json, in nanos of USD.
// mock-gpt: input 0.80 (800/token), output 2.00 (2000/token) up to 32K,
// audio 40 in (40000/token) and 80 out (80000/token), web search 0.01,
// file search 0.0025, code session 0.03, image generation 0.04 per call.
// mock-claude: web search 0.01, web fetch 0, code session 0.05.
// gpt-image-1: text 5 in (5000/token) and 40 out, image tokens 10 in
// (10000/token) and 40 out (40000/token), or 0.042 per image.
// mock-reasoner has none of these rules.
func TestQuoteCharges(t *testing.T) {
	pt := examplePrices(t)
	for i, tc := range []struct {
		name     string
		rec      Record
		cost     Amount
		unpriced []string
	}{
		{"audio in and out at their own rates", Record{Model: "mock-gpt",
			Usage: Usage{Input: 1000, AudioInput: 600, Output: 500, AudioOutput: 200}},
			400*800 + 600*40000 + 300*2000 + 200*80000, nil},
		{"audio above the input counts as the input", Record{Model: "mock-gpt", Usage: Usage{Input: 100, AudioInput: 900}},
			100 * 40000, nil},
		{"audio tokens select the tier with the rest", Record{Model: "mock-gpt", Usage: Usage{Input: 40_000, AudioInput: 10_000}},
			30_000*1200 + 10_000*40000, nil},
		{"tool calls per call", Record{Model: "mock-gpt",
			Usage: Usage{Input: 1000, Output: 100, WebSearches: 3, FileSearches: 2, CodeSessions: 1, ImageCalls: 2}},
			1000*800 + 100*2000 + 3*10_000_000 + 2*2_500_000 + 30_000_000 + 2*40_000_000, nil},
		{"anthropic searches and a free fetch", Record{Model: "mock-claude",
			Usage: Usage{Input: 1000, Output: 100, WebSearches: 2, WebFetches: 5, CodeSessions: 1}},
			1000*3000 + 100*15000 + 2*10_000_000 + 50_000_000, nil},
		{"service tier multiplies the tool calls too", Record{Model: "mock-claude", ServiceTier: "priority",
			Usage: Usage{Input: 1000, WebSearches: 2}}, (3_000_000 + 20_000_000) * 3 / 2, nil},
		{"no rule: searches unpriced, never at zero silently", Record{Model: "mock-reasoner",
			Usage: Usage{Input: 1000, Output: 500, WebSearches: 4, ImageCalls: 1}},
			1000*2000 + 500*8000, []string{ChargeWebSearch, ChargeImageCall}},
		{"no audio rule: audio at the text rate, listed unpriced", Record{Model: "mock-reasoner",
			Usage: Usage{Input: 1000, AudioInput: 400, Output: 500, AudioOutput: 100}},
			1000*2000 + 500*8000, []string{ChargeAudioInput, ChargeAudioOutput}},
		{"claude has no file search rule", Record{Model: "mock-claude", Usage: Usage{FileSearches: 1, WebFetches: 1}},
			0, []string{ChargeFileSearch}},
		{"image tokens replace the per-image price", Record{Model: "gpt-image-1", Images: 1, Outcome: OutcomeOK,
			Usage: Usage{Input: 50, ImageInput: 0, Output: 4160, ImageOutput: 4160}}, 50*5000 + 4160*40000, nil},
		{"image edit: text, image in and image out", Record{Model: "gpt-image-1", Images: 2, Outcome: OutcomeOK,
			Usage: Usage{Input: 373, ImageInput: 323, Output: 8320, ImageOutput: 8320}}, 50*5000 + 323*10000 + 8320*40000, nil},
		{"no image tokens reported: per image", Record{Model: "gpt-image-1", Images: 2, Outcome: OutcomeOK},
			2 * 42_000_000, nil},
		{"per-image model covers reported image tokens", Record{Model: "mock-image", Images: 1, Outcome: OutcomeOK,
			Usage: Usage{Input: 20, Output: 272, ImageOutput: 272}}, 40_000_000, nil},
		{"image tokens of a chat model without a rule", Record{Model: "mock-reasoner",
			Usage: Usage{Input: 100, ImageInput: 60}}, 100 * 2000, []string{ChargeImageInput}},
		{"unbilled outcome: no cost, nothing unpriced", Record{Model: "mock-reasoner", Outcome: OutcomeTimeout,
			Usage: Usage{Input: 100, WebSearches: 3}}, 0, nil},
		{"unpriced model: nothing listed", Record{Model: "no-such-model", Usage: Usage{Input: 100, WebSearches: 3}}, 0, nil},
	} {
		rec := tc.rec
		if rec.Outcome == "" {
			rec.Outcome = OutcomeOK
		}
		q := pt.QuoteRecord(&rec)
		if q.Cost != tc.cost || !reflect.DeepEqual(q.Unpriced, tc.unpriced) {
			t.Errorf("Test %d (%s): cost %d unpriced %v, want %d %v", i, tc.name, q.Cost, q.Unpriced, tc.cost, tc.unpriced)
		}
	}
}

// TestSettleRecordsUnpricedCharges checks that a settled record carries
// the charges its price had no rule for, through the ledger and into the
// report's totals and the CSV export.
func TestSettleRecordsUnpricedCharges(t *testing.T) {
	te := newTestEngine(t)
	l := te.Ledger()
	e := NewEngine(examplePrices(t), l, nil)
	res, apiErr := e.Admit(t.Context(), Subject{User: "alice", KeyID: "k1"}, "mock-reasoner", Usage{Input: 10})
	if apiErr != nil {
		t.Fatal(apiErr)
	}
	rec := res.Settle(Record{Endpoint: EndpointResponses, Usage: Usage{Input: 1000, WebSearches: 2}, Outcome: OutcomeOK})
	if !rec.Priced || rec.Cost != 2_000_000 || !reflect.DeepEqual(rec.Unpriced, []string{ChargeWebSearch}) {
		t.Fatalf("settled %+v", rec)
	}
	res2, _ := e.Admit(t.Context(), Subject{User: "alice", KeyID: "k1"}, "mock-gpt", Usage{Input: 10})
	res2.Settle(Record{Endpoint: EndpointResponses, Usage: Usage{Input: 1000, WebSearches: 2}, Outcome: OutcomeOK,
		DurationMillis: 2417})
	te.flush(t)
	var got []Record
	if err := l.Records(t.Context(), time.Time{}, time.Time{}, func(r Record) error {
		got = append(got, r)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || !reflect.DeepEqual(got[0].Unpriced, []string{ChargeWebSearch}) || got[0].Usage.WebSearches != 2 ||
		got[1].Unpriced != nil || got[1].Cost != 1000*800+2*10_000_000 || got[0].DurationMillis != 0 || got[1].DurationMillis != 2417 {
		t.Fatalf("ledger records %+v", got)
	}
	tot := totalIn(report(t, l, ReportFilter{}), "USD")
	if tot.Requests != 2 || tot.UnpricedCharges != 1 || tot.Usage.WebSearches != 4 {
		t.Fatalf("report totals %+v", tot)
	}
	var csv strings.Builder
	if err := l.ExportCSV(t.Context(), RecordQuery{User: "alice"}, &csv); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(csv.String()), "\n")
	// The duration follows the unpriced charges, empty when not measured;
	// the team and tags come last.
	if len(lines) != 3 || !strings.HasSuffix(lines[0], ",web_searches,web_fetches,file_searches,code_sessions,image_generation_calls,unpriced,duration_ms,team,tags") ||
		!strings.HasSuffix(lines[1], ",USD,0,0,0,0,2,0,0,0,0,web_search,,,") || !strings.HasSuffix(lines[2], ",USD,0,0,0,0,2,0,0,0,0,,2417,,") {
		t.Fatalf("csv:\n%s", csv.String())
	}
}

// TestParseChargeRules checks the new rules' errors and their view.
func TestParseChargeRules(t *testing.T) {
	for i, tc := range []struct{ src, err string }{
		{`{"currency":"USD","models":{"m":{"tiers":[{"input":1,"output":2}],"tools":{"web_serch":"0.01"}}}}`, `unknown tool "web_serch"`},
		{`{"currency":"USD","models":{"m":{"tiers":[{"input":1,"output":2}],"tools":{"web_search":"-1"}}}}`, `tools.web_search: -1 is negative`},
		{`{"currency":"USD","models":{"m":{"tiers":[{"input":1,"output":2}],"audio":{}}}}`, `audio: set input and/or output`},
		{`{"currency":"USD","models":{"m":{"tiers":[{"input":1,"output":2}],"audio":{"in":"1"}}}}`, `audio: unknown field "in"`},
		{`{"currency":"USD","models":{"m":{"image":"0.04","image_tokens":{"output":"40"}}}}`, `image_tokens: needs tiers`},
		{`{"currency":"USD","models":{"m":{"embedding":"0.02","audio":{"input":"1"}}}}`, `audio: needs tiers`},
	} {
		_, err := ParsePrices("p.json", []byte(tc.src))
		if err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("Test %d: error %v, want %q", i, err, tc.err)
		}
	}
	pt := mustPrices(t, `{"currency":"USD","models":{"t":{"tools":{"web_search":"0.01"},"video_task":"1"},
		"m":{"tiers":[{"input":1,"output":2}],"audio":{"output":"80"},"image_tokens":{"input":"10","output":"40"}}}}`)
	want := map[string]*ChargePrices{
		"m": {AudioOutput: "80", ImageInput: "10", ImageOutput: "40"},
		"t": {Tools: map[string]string{"web_search": "0.01"}},
	}
	for _, m := range pt.Models() {
		if !reflect.DeepEqual(m.Charges, want[m.Pattern]) {
			t.Errorf("model %s: charges %+v, want %+v", m.Pattern, m.Charges, want[m.Pattern])
		}
	}
	// A tool-only price on a task model is a price: its calls cost, with
	// the task's.
	q := pt.QuoteRecord(&Record{Model: "t", Outcome: OutcomeOK, Usage: Usage{WebSearches: 3}})
	if q.Cost != 1_000_000_000+30_000_000 || q.Unpriced != nil {
		t.Errorf("task with searches: %+v", q)
	}
}
