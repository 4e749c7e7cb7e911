package billing

import (
	"slices"
	"strings"
	"testing"
)

// TestPriceUnits prices the quantities of the speech, transcription,
// rerank, moderation and pass-through endpoints exactly, and lists a
// quantity without a rule as unpriced instead of pricing it at 0.
func TestPriceUnits(t *testing.T) {
	pt, err := ParsePrices("p.json", []byte(`{"currency": "USD", "models": {
		"tts-1": {"character": "0.000015"},
		"gpt-4o-mini-tts": {"tiers": [{"input": "0.6", "output": "12"}], "character": "0.000015"},
		"whisper-1": {"audio_second": "0.0001"},
		"rerank-v3.5": {"search_unit": "0.002"},
		"omni-moderation-latest": {"request": "0"},
		"paid-moderation": {"request": "0.0005"},
		"chat-only": {"tiers": [{"input": "1", "output": "2"}]}
	}}`))
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range []struct {
		model    string
		rec      Record
		cost     Amount
		unpriced []string
	}{
		{"tts-1", Record{Outcome: OutcomeOK, Usage: Usage{Characters: 1000}}, 15_000_000, nil},
		// Reported tokens at the tier and characters: both apply.
		{"gpt-4o-mini-tts", Record{Outcome: OutcomeOK, Usage: Usage{Input: 1_000_000, Output: 0}}, 600_000_000, nil},
		{"whisper-1", Record{Outcome: OutcomeOK, Usage: Usage{AudioMillis: 61_500}}, 6_150_000, nil},
		{"rerank-v3.5", Record{Outcome: OutcomeOK, Usage: Usage{SearchUnits: 3}}, 6_000_000, nil},
		{"omni-moderation-latest", Record{Outcome: OutcomeOK}, 0, nil},
		{"paid-moderation", Record{Outcome: OutcomeOK}, 500_000, nil},
		// An upstream error is not a request answered.
		{"paid-moderation", Record{Outcome: OutcomeUpstreamError}, 0, nil},
		// Characters on a model priced by tokens alone: billed by the
		// tokens; on a model with neither: unpriced, not 0.
		{"chat-only", Record{Outcome: OutcomeOK, Usage: Usage{Input: 10, Characters: 40}}, 10_000, nil},
		{"rerank-v3.5", Record{Outcome: OutcomeOK, Usage: Usage{Input: 10, Characters: 40}}, 0, []string{ChargeCharacters}},
		{"whisper-1", Record{Outcome: OutcomeOK, Usage: Usage{AudioMillis: 1000, SearchUnits: 2}}, 100_000, []string{ChargeSearchUnit}},
		// An estimated rerank on a model priced by tokens: the tokens.
		{"chat-only", Record{Outcome: OutcomeOK, Usage: Usage{Input: 100, SearchUnits: 1}}, 100_000, nil},
		// Audio seconds are no measure of tokens: unpriced on a token model.
		{"chat-only", Record{Outcome: OutcomeOK, Usage: Usage{AudioMillis: 1000}}, 0, []string{ChargeAudioSecond}},
	} {
		c.rec.Model = c.model
		q := pt.QuoteRecord(&c.rec)
		if !q.Priced || q.Cost != c.cost || !slices.Equal(q.Unpriced, c.unpriced) {
			t.Errorf("Test %d: %s %+v: quote %+v, want cost %d unpriced %v", i, c.model, c.rec.Usage, q, c.cost, c.unpriced)
		}
	}
	// Admission's estimate includes the request price; a task's does not.
	if q := pt.Quote("paid-moderation", Usage{}); q.Cost != 500_000 {
		t.Errorf("estimate of a paid moderation: %+v", q)
	}
	if q := pt.QuoteTask("paid-moderation", 0, 0); q.Cost != 0 {
		t.Errorf("task estimate: %+v", q)
	}
	// The rules show in the price list in the file's units.
	for _, mp := range pt.Models() {
		if mp.Pattern == "whisper-1" && (mp.Units == nil || mp.Units.AudioSecond != "0.0001") {
			t.Errorf("whisper-1 listed as %+v", mp.Units)
		}
	}
}

// TestPriceUnitsInvalid refuses bad unit prices with the field at fault.
func TestPriceUnitsInvalid(t *testing.T) {
	for i, c := range []struct{ model, want string }{
		{`{"character": "-1"}`, "character"},
		{`{"request": "abc"}`, "request"},
		{`{"search_unit": true}`, "search_unit"},
		{`{}`, "no prices"},
	} {
		_, err := ParsePrices("p.json", []byte(`{"currency": "USD", "models": {"m": `+c.model+`}}`))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Test %d: %s: error %v, want one naming %s", i, c.model, err, c.want)
		}
	}
}
