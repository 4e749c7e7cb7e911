package billing

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path"
	"sort"
	"strings"

	"github.com/shopspring/decimal"
	"github.com/tidwall/gjson"

	"github.com/caddy-air/caddy-air/jsonlimit"
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
//	    "text-embedding-3-small": {"embedding": "0.02"},
//	    "gpt-image-1": {"image": "0.04"},
//	    "sora-2": {"video_second": "0.10"},
//	    "veo-*": {"video_task": "0.5"}
//	  }
//	}
//
// The top-level currency is the default of every model. Model keys are exact
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
// task; a model has at most one of them. Prices are JSON strings or numbers
// and are read exactly, never through floating point.
type PriceTable struct {
	currency string
	exact    map[string]*modelPrice
	globs    []*modelPrice
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

// parsePrices does the work of ParsePrices; its errors omit the file name.
func parsePrices(data []byte) (*PriceTable, error) {
	if err := syntaxError(data); err != nil {
		return nil, err
	}
	root := gjson.ParseBytes(data)
	if !root.IsObject() {
		return nil, errors.New("the price file must be a JSON object")
	}
	pt := &PriceTable{exact: map[string]*modelPrice{}}
	var models gjson.Result
	var err error
	root.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "currency":
			pt.currency, err = parseCurrency(v)
			if err != nil {
				err = fmt.Errorf("currency: %w", err)
			}
		case "models":
			models = v
		default:
			err = fmt.Errorf("unknown field %q", k.Str)
		}
		return err == nil
	})
	if err != nil {
		return nil, err
	}
	if !models.IsObject() {
		return nil, errors.New("models: must be an object of model ids to prices")
	}
	seen := map[string]bool{}
	models.ForEach(func(k, v gjson.Result) bool {
		id := k.Str
		var mp *modelPrice
		switch {
		case id == "":
			err = errors.New("models: empty model id")
		case seen[id]:
			err = fmt.Errorf("model %q: listed twice", id)
		default:
			mp, err = parseModel(id, v, pt.currency)
			if err != nil {
				err = fmt.Errorf("model %q: %w", id, err)
			}
		}
		if err != nil {
			return false
		}
		seen[id] = true
		if isGlob(id) {
			pt.globs = append(pt.globs, mp)
		} else {
			pt.exact[id] = mp
		}
		return true
	})
	if err != nil {
		return nil, err
	}
	sort.SliceStable(pt.globs, func(i, j int) bool { return len(pt.globs[i].pattern) > len(pt.globs[j].pattern) })
	return pt, nil
}

// syntaxError reports where data is not valid JSON, or nests deeper than
// jsonlimit.DefaultMaxDepth, if it does.
func syntaxError(data []byte) error {
	err := jsonlimit.Check(data, jsonlimit.DefaultMaxDepth)
	var de *jsonlimit.DepthError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &de):
		line := 1 + strings.Count(string(data[:de.Offset]), "\n")
		return fmt.Errorf("line %d: the file nests deeper than the limit of %d levels", line, de.Limit)
	}
	var v any
	err = json.Unmarshal(data, &v)
	var se *json.SyntaxError
	if errors.As(err, &se) {
		line := 1 + strings.Count(string(data[:se.Offset]), "\n")
		return fmt.Errorf("invalid JSON on line %d: %v", line, se)
	}
	return errors.New("invalid JSON")
}

// isGlob reports whether a model key is a path.Match pattern.
func isGlob(id string) bool { return strings.ContainsAny(id, `*?[\`) }

// parseModel parses one model's entry.
func parseModel(id string, v gjson.Result, currency string) (*modelPrice, error) {
	if isGlob(id) {
		if _, err := path.Match(id, ""); err != nil {
			return nil, fmt.Errorf("invalid glob: %v", err)
		}
	}
	if !v.IsObject() {
		return nil, errors.New("must be an object")
	}
	mp := &modelPrice{pattern: id, currency: currency}
	cm := cacheMultipliers{defaultCacheCreation, defaultCacheCreation1h, defaultCacheRead}
	var tiers, embedding gjson.Result
	var err error
	v.ForEach(func(k, f gjson.Result) bool {
		switch k.Str {
		case "currency":
			mp.currency, err = parseCurrency(f)
			if err != nil {
				err = fmt.Errorf("currency: %w", err)
			}
		case "tiers":
			tiers = f
		case "cache":
			cm, err = parseCache(f)
		case "embedding":
			embedding = f
		case "service_tiers":
			mp.serviceTiers, err = parseServiceTiers(f)
		case "image", "video_second", "video_task":
			err = mp.setUnit(k.Str, f)
		default:
			err = fmt.Errorf("unknown field %q", k.Str)
		}
		return err == nil
	})
	if err != nil {
		return nil, err
	}
	if mp.currency == "" {
		return nil, errors.New("currency: not set here nor at the top level")
	}
	switch {
	case tiers.Exists() && embedding.Exists():
		return nil, errors.New("embedding: a model has tiers or an embedding price, not both")
	case tiers.Exists():
		if mp.tiers, err = parseTiers(tiers, cm); err != nil {
			return nil, err
		}
	case embedding.Exists():
		d, err := parsePrice(embedding)
		if err != nil {
			return nil, fmt.Errorf("embedding: %w", err)
		}
		mp.tiers = []tier{cm.tier(0, d, decimal.Zero)}
	}
	if len(mp.tiers) == 0 && mp.unit == unitNone {
		return nil, errors.New("no prices: set tiers, embedding, image, video_second or video_task")
	}
	mp.cache, mp.embedding = cm, embedding.Exists()
	return mp, nil
}

// setUnit sets the model's task price from field name and value f.
func (mp *modelPrice) setUnit(name string, f gjson.Result) error {
	if mp.unit != unitNone {
		return fmt.Errorf("%s: a model has at most one of image, video_second and video_task", name)
	}
	d, err := parsePrice(f)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	switch name {
	case "image":
		mp.unit, mp.unitRate = unitImage, newRate(d.Mul(decNanosPerUnit))
	case "video_second":
		mp.unit, mp.unitRate = unitVideoSecond, newRate(d.Mul(perSecondToNanosPerMilli))
	default:
		mp.unit, mp.unitRate = unitVideoTask, newRate(d.Mul(decNanosPerUnit))
	}
	return nil
}

// parseTiers parses a model's token tiers and applies the cache multipliers.
func parseTiers(v gjson.Result, cm cacheMultipliers) ([]tier, error) {
	if !v.IsArray() {
		return nil, errors.New("tiers: must be an array")
	}
	raw := v.Array()
	if len(raw) == 0 {
		return nil, errors.New("tiers: must not be empty")
	}
	tiers := make([]tier, len(raw))
	for i, tv := range raw {
		t, err := parseTier(tv, cm)
		if err != nil {
			return nil, fmt.Errorf("tiers[%d]%w", i, err)
		}
		last := i == len(raw)-1
		switch {
		case last && t.upTo != 0:
			return nil, fmt.Errorf("tiers[%d].up_to: the last tier must be open-ended (omit up_to)", i)
		case !last && t.upTo == 0:
			return nil, fmt.Errorf("tiers[%d].up_to: required on every tier but the last", i)
		case i > 0 && !last && t.upTo <= tiers[i-1].upTo:
			return nil, fmt.Errorf("tiers[%d].up_to: %d is not above the previous tier's %d", i, t.upTo, tiers[i-1].upTo)
		}
		tiers[i] = t
	}
	return tiers, nil
}

// parseTier parses one tier. Its errors start with the field, as ".input: …",
// so that the caller can prefix the tier's index.
func parseTier(v gjson.Result, cm cacheMultipliers) (tier, error) {
	var t tier
	if !v.IsObject() {
		return t, errors.New(": must be an object")
	}
	var in, out *decimal.Decimal
	var err error
	v.ForEach(func(k, f gjson.Result) bool {
		switch k.Str {
		case "up_to":
			t.upTo, err = parseUpTo(f)
		case "input", "output":
			var d decimal.Decimal
			d, err = parsePrice(f)
			if k.Str == "input" {
				in = &d
			} else {
				out = &d
			}
		default:
			err = fmt.Errorf(": unknown field %q", k.Str)
			return false
		}
		if err != nil {
			err = fmt.Errorf(".%s: %w", k.Str, err)
		}
		return err == nil
	})
	switch {
	case err != nil:
		return t, err
	case in == nil:
		return t, errors.New(".input: required")
	case out == nil:
		return t, errors.New(".output: required")
	}
	return cm.tier(t.upTo, *in, *out), nil
}

// parseUpTo parses a tier's up_to: a positive whole number of tokens.
func parseUpTo(f gjson.Result) (int64, error) {
	if f.Type != gjson.Number {
		return 0, fmt.Errorf("must be a number of tokens, got %s", f.Raw)
	}
	d, err := decimal.NewFromString(f.Raw)
	if err != nil || !d.IsInteger() || d.Sign() <= 0 || d.Cmp(decimal.NewFromInt(math.MaxInt64)) > 0 {
		return 0, fmt.Errorf("must be a positive whole number of tokens, got %s", f.Raw)
	}
	return d.IntPart(), nil
}

// parsePrice parses a price given as a JSON string or number, exactly.
func parsePrice(f gjson.Result) (decimal.Decimal, error) {
	var s string
	switch f.Type {
	case gjson.String:
		s = strings.TrimSpace(f.Str)
	case gjson.Number:
		s = f.Raw
	default:
		return decimal.Zero, fmt.Errorf("must be a decimal string or number, got %s", f.Raw)
	}
	if len(s) > 40 {
		return decimal.Zero, fmt.Errorf("%.20q… is too long for a price", s)
	}
	d, err := decimal.NewFromString(s)
	if err != nil {
		return decimal.Zero, fmt.Errorf("%q is not a decimal number", s)
	}
	// Normalizing keeps exponents small ("0e999" is zero with exponent 0), so
	// that no later addition has to rescale to a huge precision.
	d = d.Normalize()
	switch {
	case d.IsNegative():
		return decimal.Zero, fmt.Errorf("%s is negative", s)
	case d.Cmp(maxPrice) > 0:
		return decimal.Zero, fmt.Errorf("%s is implausibly large", s)
	case d.Exponent() < -30:
		return decimal.Zero, fmt.Errorf("%s has too many decimal places", s)
	}
	return d, nil
}

// parseCurrency parses a currency code.
func parseCurrency(f gjson.Result) (string, error) {
	if f.Type != gjson.String || strings.TrimSpace(f.Str) == "" {
		return "", fmt.Errorf("must be a non-empty string such as \"USD\", got %s", f.Raw)
	}
	return strings.TrimSpace(f.Str), nil
}
