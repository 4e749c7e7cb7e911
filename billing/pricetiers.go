package billing

import (
	"errors"
	"fmt"
	"math"

	"github.com/shopspring/decimal"
	"github.com/tidwall/gjson"
)

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
