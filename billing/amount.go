package billing

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/shopspring/decimal"

	"github.com/caddy-air/caddy-air/store"
)

// Amount is a sum of money in nano units of its currency: 1 USD is
// 1_000_000_000. Costs are computed exactly with decimals and rounded once,
// half to even, to an Amount. In JSON an Amount is a decimal string in
// currency units ("0.000123450"); a JSON number is accepted on input.
type Amount int64

// nanosPerUnit is the number of Amount units in one currency unit.
const nanosPerUnit = 1_000_000_000

// decNanosPerUnit is nanosPerUnit as a decimal.
var decNanosPerUnit = decimal.NewFromInt(nanosPerUnit)

// addSat returns a+b, saturating at the bounds of int64 instead of
// wrapping (store.AddSat): a sum of money must never turn an overspent
// account into one with room left.
func (a Amount) addSat(b Amount) Amount { return Amount(store.AddSat(int64(a), int64(b))) }

// String formats a as a decimal in currency units with nine decimal places,
// e.g. "0.000123450" or "-1.500000000".
func (a Amount) String() string {
	var b [32]byte
	return string(a.appendTo(b[:0]))
}

// Short formats a for people: the String form without its trailing zeros
// beyond the second decimal place, e.g. "0.25", "1.50", "0.000123450" →
// "0.00012345". Nothing is rounded: it shows a exactly.
func (a Amount) Short() string {
	s := a.String()
	end := len(s)
	for end > len(s)-7 && s[end-1] == '0' {
		end--
	}
	return s[:end]
}

// appendTo appends a's String form to dst.
func (a Amount) appendTo(dst []byte) []byte {
	u := uint64(a)
	if a < 0 {
		dst = append(dst, '-')
		u = -u
	}
	dst = strconv.AppendUint(dst, u/nanosPerUnit, 10)
	dst = append(dst, '.')
	frac := u % nanosPerUnit
	for div := uint64(nanosPerUnit / 10); div > 0; div /= 10 {
		dst = append(dst, byte('0'+frac/div%10))
	}
	return dst
}

// ParseAmount parses a decimal number of currency units, such as "12.5" or
// "0.000000001", into an Amount. It rejects more than nine decimal places
// and values out of range rather than rounding them.
func ParseAmount(s string) (Amount, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, errors.New("empty amount")
	}
	if len(s) > 64 {
		return 0, fmt.Errorf("amount %.20q… is too long", s)
	}
	d, err := decimal.NewFromString(s)
	if err != nil {
		return 0, fmt.Errorf("invalid amount %q: not a decimal number", s)
	}
	n := d.Mul(decNanosPerUnit)
	if !n.IsInteger() {
		return 0, fmt.Errorf("invalid amount %q: more than 9 decimal places", s)
	}
	if n.Cmp(decMaxAmount) > 0 || n.Cmp(decMinAmount) < 0 {
		return 0, fmt.Errorf("invalid amount %q: out of range", s)
	}
	return Amount(n.IntPart()), nil
}

// decMaxAmount and decMinAmount bound an Amount.
var (
	decMaxAmount = decimal.NewFromInt(math.MaxInt64)
	decMinAmount = decimal.NewFromInt(math.MinInt64)
)

// amountFromNanos rounds a decimal number of nano units half to even to an
// Amount, saturating at the bounds of int64.
func amountFromNanos(n decimal.Decimal) Amount {
	n = n.RoundBank(0)
	switch {
	case n.Cmp(decMaxAmount) > 0:
		return math.MaxInt64
	case n.Cmp(decMinAmount) < 0:
		return math.MinInt64
	}
	return Amount(n.IntPart())
}

// MarshalJSON encodes a as a JSON string in currency units.
func (a Amount) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, 24)
	b = append(b, '"')
	b = a.appendTo(b)
	return append(b, '"'), nil
}

// UnmarshalJSON decodes a JSON string or number of currency units.
func (a *Amount) UnmarshalJSON(b []byte) error {
	s := string(b)
	if s == "null" {
		return nil
	}
	if uq, err := strconv.Unquote(s); err == nil {
		s = uq
	}
	v, err := ParseAmount(s)
	if err != nil {
		return err
	}
	*a = v
	return nil
}
