package billing

import (
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"sort"
	"strings"

	"github.com/shopspring/decimal"
	"github.com/tidwall/gjson"

	"github.com/caddy-air/caddy-air/jsonlimit"
)

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
		case "rates":
			pt.rates, err = parseRates(v)
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
	if err := pt.checkRates(); err != nil {
		return nil, err
	}
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
	var tiers, embedding, audio, imageTokens gjson.Result
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
		case "audio":
			audio = f
			mp.charges.audioIn, mp.charges.audioOut, err = parseTokenPair(k.Str, f)
		case "image_tokens":
			imageTokens = f
			mp.charges.imageIn, mp.charges.imageOut, err = parseTokenPair(k.Str, f)
		case "tools":
			mp.charges.tools, err = parseTools(f)
		case "character", "audio_second", "search_unit", "request":
			err = mp.units.set(k.Str, f)
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
	if len(mp.tiers) == 0 && mp.unit == unitNone && !mp.units.any() {
		return nil, errors.New("no prices: set tiers, embedding, image, video_second, video_task, character, audio_second, search_unit or request")
	}
	for _, r := range [...]struct {
		name string
		v    gjson.Result
	}{{"audio", audio}, {"image_tokens", imageTokens}} {
		if r.v.Exists() && (len(mp.tiers) == 0 || embedding.Exists()) {
			return nil, fmt.Errorf("%s: needs tiers, whose prices apply to the text tokens", r.name)
		}
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
