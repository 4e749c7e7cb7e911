package billing

import (
	"errors"
	"fmt"

	"github.com/shopspring/decimal"
	"github.com/tidwall/gjson"
)

// The price rules beyond plain token tiers: cache write and read
// multipliers (5-minute and 1-hour writes priced apart) and service tier
// multipliers. See PriceTable for the file format.

// cacheMultipliers are a model's cache prices relative to its input price.
type cacheMultipliers struct {
	creation, creation1h, read decimal.Decimal
}

// tier returns the tier of up_to upTo with input and output prices in
// units per million tokens.
func (cm cacheMultipliers) tier(upTo int64, in, out decimal.Decimal) tier {
	inN := in.Mul(perMillionToNanosPerToken)
	return tier{
		upTo:       upTo,
		input:      newRate(inN),
		output:     newRate(out.Mul(perMillionToNanosPerToken)),
		creation:   newRate(inN.Mul(cm.creation)),
		creation1h: newRate(inN.Mul(cm.creation1h)),
		read:       newRate(inN.Mul(cm.read)),
	}
}

// parseCache parses a model's cache multipliers.
func parseCache(v gjson.Result) (cacheMultipliers, error) {
	cm := cacheMultipliers{defaultCacheCreation, defaultCacheCreation1h, defaultCacheRead}
	if !v.IsObject() {
		return cm, errors.New("cache: must be an object")
	}
	var err error
	v.ForEach(func(k, f gjson.Result) bool {
		var dst *decimal.Decimal
		switch k.Str {
		case "creation":
			dst = &cm.creation
		case "creation_1h":
			dst = &cm.creation1h
		case "read":
			dst = &cm.read
		default:
			err = fmt.Errorf("cache: unknown field %q", k.Str)
			return false
		}
		if *dst, err = parsePrice(f); err != nil {
			err = fmt.Errorf("cache.%s: %w", k.Str, err)
			return false
		}
		return true
	})
	return cm, err
}

// parseServiceTiers parses a model's service tier multipliers.
func parseServiceTiers(v gjson.Result) (map[string]decimal.Decimal, error) {
	if !v.IsObject() {
		return nil, errors.New("service_tiers: must be an object of service tiers to multipliers")
	}
	m := map[string]decimal.Decimal{}
	var err error
	v.ForEach(func(k, f gjson.Result) bool {
		if k.Str == "" {
			err = errors.New("service_tiers: empty service tier")
			return false
		}
		var d decimal.Decimal
		if d, err = parsePrice(f); err != nil {
			err = fmt.Errorf("service_tiers.%s: %w", k.Str, err)
			return false
		}
		m[k.Str] = d
		return true
	})
	return m, err
}
