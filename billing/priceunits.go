package billing

import (
	"fmt"

	"github.com/shopspring/decimal"
	"github.com/tidwall/gjson"
)

// The price rules of the endpoints billed by quantities other than tokens
// (speech, transcription, rerank, moderation, pass-through):
//
//	"character":    "0.000015"  per input character (text to speech)
//	"audio_second": "0.0001"    per second of audio (transcription)
//	"search_unit":  "0.002"     per search unit (rerank)
//	"request":      "0"         per request answered (moderation, pass-through)
//
// Each is optional and may stand alone or beside tiers. A speech request
// records both its input characters and its (estimated) input tokens: a
// model with a character price bills the characters, one with tiers the
// tokens (set one of them). A quantity the usage has and the model has no rule for is
// listed in Quote.Unpriced, never priced at 0; a request price applies to
// every request the upstream answered successfully (outcome ok), and may
// be 0 (moderations are free at OpenAI).

// Charge kinds of the quantities beyond tokens (see Record.Unpriced).
const (
	ChargeCharacters  = "characters"
	ChargeAudioSecond = "audio_seconds"
	ChargeSearchUnit  = "search_units"
)

// unitRates are a model's rates of the quantities beyond tokens; nil has
// no rule.
type unitRates struct {
	// character and searchUnit are in nanos per unit, audio in nanos per
	// millisecond, request in nanos per request.
	character, audio, searchUnit, request *rate
}

// isUnitRule reports whether name is one of the rules unitRates holds.
func isUnitRule(name string) bool {
	switch name {
	case "character", "audio_second", "search_unit", "request":
		return true
	}
	return false
}

// set parses the rule name from f.
func (ur *unitRates) set(name string, f gjson.Result) error {
	d, err := parsePrice(f)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	per := decNanosPerUnit
	dst := &ur.character
	switch name {
	case "audio_second":
		per, dst = perSecondToNanosPerMilli, &ur.audio
	case "search_unit":
		dst = &ur.searchUnit
	case "request":
		dst = &ur.request
	}
	r := newRate(d.Mul(per))
	*dst = &r
	return nil
}

// any reports whether the model has one of these rules.
func (ur *unitRates) any() bool {
	return ur.character != nil || ur.audio != nil || ur.searchUnit != nil || ur.request != nil
}

// terms appends the price of u's quantities beyond tokens, and of the
// request itself when answered is set, and returns the quantities with no
// rule. Characters and search units measure an input (a speech's text, a
// rerank's documents) that its tokens measure too: a model priced by
// tokens (tiers) and not by them bills the input by its tokens, and they
// are not unpriced.
func (ur *unitRates) terms(terms []term, u Usage, answered, tokensPriced bool, unpriced []string) ([]term, []string) {
	for _, q := range [...]struct {
		n    int64
		r    *rate
		kind string
	}{{u.Characters, ur.character, ChargeCharacters}, {u.AudioMillis, ur.audio, ChargeAudioSecond},
		{u.SearchUnits, ur.searchUnit, ChargeSearchUnit}} {
		switch {
		case q.n <= 0:
		case q.r != nil:
			terms = append(terms, term{q.n, *q.r})
		case q.kind != ChargeAudioSecond && tokensPriced:
		default:
			unpriced = append(unpriced, q.kind)
		}
	}
	if answered && ur.request != nil {
		terms = append(terms, term{1, *ur.request})
	}
	return terms, unpriced
}

// UnitPrices are a model's prices of the quantities beyond tokens, in the
// price file's units; empty strings have no rule.
type UnitPrices struct {
	// Character is per input character.
	Character string `json:"character,omitempty"`
	// AudioSecond is per second of audio.
	AudioSecond string `json:"audio_second,omitempty"`
	// SearchUnit is per search unit.
	SearchUnit string `json:"search_unit,omitempty"`
	// Request is per request answered.
	Request string `json:"request,omitempty"`
}

// view returns ur in the price file's units, nil when it has no rule.
func (ur *unitRates) view() *UnitPrices {
	if !ur.any() {
		return nil
	}
	s := func(r *rate, per decimal.Decimal) string {
		if r == nil {
			return ""
		}
		return r.d.Div(per).String()
	}
	return &UnitPrices{Character: s(ur.character, decNanosPerUnit), AudioSecond: s(ur.audio, perSecondToNanosPerMilli),
		SearchUnit: s(ur.searchUnit, decNanosPerUnit), Request: s(ur.request, decNanosPerUnit)}
}
