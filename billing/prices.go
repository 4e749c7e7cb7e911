package billing

import (
	"fmt"
	"os"
	"path"

	"github.com/shopspring/decimal"
)

// PriceTable holds the prices of models, read from a price file. It is
// immutable once loaded and safe for concurrent use.
//
// A price file is JSON:
//
//	{
//	  "currency": "USD",
//	  "models": {
//	    "qwen3-max": {
//	      "currency": "CNY",
//	      "tiers": [
//	        {"up_to": 32000, "input": "6", "output": "24"},
//	        {"up_to": 128000, "input": "10", "output": "40"},
//	        {"input": "15", "output": "60"}
//	      ],
//	      "cache": {"creation": "1.25", "creation_1h": "2", "read": "0.1"},
//	      "service_tiers": {"flex": "0.5", "priority": "1.75"}
//	    },
//	    "gpt-4o-audio": {
//	      "tiers": [{"input": "2.5", "output": "10"}],
//	      "audio": {"input": "40", "output": "80"},
//	      "tools": {"web_search": "0.01", "file_search": "0.0025",
//	                "code_session": "0.03", "image_generation": "0.04"}
//	    },
//	    "text-embedding-3-small": {"embedding": "0.02"},
//	    "gpt-image-1": {
//	      "tiers": [{"input": "5", "output": "40"}],
//	      "image_tokens": {"input": "10", "output": "40"},
//	      "image": "0.04"
//	    },
//	    "sora-2": {"video_second": "0.10"},
//	    "veo-*": {"video_task": "0.5"},
//	    "tts-1": {"character": "0.000015"},
//	    "whisper-1": {"audio_second": "0.0001"},
//	    "rerank-v3.5": {"search_unit": "0.002"},
//	    "omni-moderation-latest": {"request": "0"}
//	  }
//	}
//
// The top-level currency is the default of every model; the top-level
// "rates" convert other currencies into it for spend limits (rates.go). Model keys are exact
// ids or path.Match globs; an exact id wins over any glob, and among globs
// the longest pattern wins (ties: the one listed first). Token prices are
// per million tokens; a tier covers total prompt tokens up to and including
// up_to, and only the last tier may (and must) omit it. Cache multipliers
// apply to the tier's input price and default to 1.25 (creation: 5-minute
// cache writes), 2 (creation_1h: 1-hour cache writes) and 0.1 (read).
// Reasoning tokens are output tokens and billed at the output price. An
// embedding price is per million input tokens: it is a single open-ended
// tier with that input price and a zero output price, and excludes tiers.
// service_tiers maps a service tier the upstream reports ("flex",
// "priority", ...) to a multiplier of the request's whole price; a tier it
// does not list costs the plain price. Task prices are per image, per second of video or per succeeded
// task; a model has at most one of them. audio and image_tokens price the
// audio and image parts of the input and output tokens per million (they
// need tiers, which price the rest), and tools prices the provider's tool
// calls per call (pricecharges.go); character, audio_second, search_unit
// and request price a speech's input characters, a transcription's audio,
// a rerank's search units and each request answered (priceunits.go); a
// charge the usage has and the model has no rule for is recorded as
// unpriced (Record.Unpriced). Prices are JSON strings or numbers
// and are read exactly, never through floating point.
type PriceTable struct {
	currency string
	exact    map[string]*modelPrice
	globs    []*modelPrice
	// rates are the exchange rates into currency (rates.go).
	rates map[string]decimal.Decimal
}

// unitKind says how a model's task price applies.
type unitKind uint8

// Kinds of task price.
const (
	unitNone unitKind = iota
	unitImage
	unitVideoSecond
	unitVideoTask
)

// modelPrice is one model's parsed prices, converted to nano units.
type modelPrice struct {
	pattern  string
	currency string
	tiers    []tier
	unit     unitKind
	// unitRate is in nanos per image, per millisecond of video or per task.
	unitRate rate
	// serviceTiers maps a reported service tier to its price multiplier.
	serviceTiers map[string]decimal.Decimal
	// cache is the model's cache multipliers; embedding is set for an
	// embedding price. Both are kept for Models.
	cache     cacheMultipliers
	embedding bool
	// charges are the rates of audio and image tokens and tool calls.
	charges chargeRates
	// units are the rates of characters, audio seconds, search units and
	// requests (priceunits.go).
	units unitRates
}

// tier is one token tier with its rates in nanos per token.
type tier struct {
	upTo                                      int64 // 0 means open-ended
	input, output, creation, creation1h, read rate
}

// rate is a non-negative price in nano units per unit of usage. When the
// value is a whole number that fits an int64, i holds it and exact is true,
// which lets Quote use integer arithmetic.
type rate struct {
	d     decimal.Decimal
	i     int64
	exact bool
}

// newRate returns d as a rate.
func newRate(d decimal.Decimal) rate {
	r := rate{d: d}
	if d.IsInteger() && d.Cmp(decMaxAmount) <= 0 {
		r.i, r.exact = d.IntPart(), true
	}
	return r
}

// Default cache multipliers, relative to the tier's input price.
var (
	defaultCacheCreation   = decimal.RequireFromString("1.25")
	defaultCacheCreation1h = decimal.RequireFromString("2")
	defaultCacheRead       = decimal.RequireFromString("0.1")
)

// Unit conversions of prices to nano units.
var (
	perMillionToNanosPerToken = decimal.NewFromInt(1000)          // 1e9 / 1e6
	perSecondToNanosPerMilli  = decimal.NewFromInt(1_000_000)     // 1e9 / 1e3
	maxPrice                  = decimal.NewFromInt(1_000_000_000) // sanity bound
)

// LoadPrices reads and parses the price file at path. Errors name the file,
// the model and the field at fault.
func LoadPrices(path string) (*PriceTable, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading price file: %w", err)
	}
	return ParsePrices(path, data)
}

// ParsePrices parses a price file's contents; name is used in errors.
func ParsePrices(name string, data []byte) (*PriceTable, error) {
	pt, err := parsePrices(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return pt, nil
}

// Currency is the price file's default currency ("" if it sets none).
func (pt *PriceTable) Currency() string {
	if pt == nil {
		return ""
	}
	return pt.currency
}

// Priced reports whether model has a price.
func (pt *PriceTable) Priced(model string) bool { return pt.lookup(model) != nil }

// lookup finds model's prices: an exact id first, then the longest glob.
func (pt *PriceTable) lookup(model string) *modelPrice {
	if pt == nil {
		return nil
	}
	if mp, ok := pt.exact[model]; ok {
		return mp
	}
	for _, mp := range pt.globs {
		if ok, _ := path.Match(mp.pattern, model); ok {
			return mp
		}
	}
	return nil
}
