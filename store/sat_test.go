package store

import (
	"math"
	"testing"
)

// TestSaturatingSums checks that sums of money and tokens stop at the
// bounds of int64 instead of wrapping to the other end.
func TestSaturatingSums(t *testing.T) {
	const hi, lo = math.MaxInt64, math.MinInt64
	for _, tc := range []struct {
		a, b, add, sub int64
	}{
		{1, 2, 3, -1},
		{hi, 1, hi, hi - 1},
		{hi, hi, hi, 0},
		{hi - 5, 10, hi, hi - 15},
		{lo, -1, lo, lo + 1},
		{lo, 1, lo + 1, lo},
		{100, lo, lo + 100, hi},
		{-2, lo, lo, hi - 1},
		{0, hi, hi, -hi},
		{-100, hi, hi - 100, lo},
	} {
		if got := AddSat(tc.a, tc.b); got != tc.add {
			t.Errorf("AddSat(%d, %d) = %d; want %d", tc.a, tc.b, got, tc.add)
		}
		if got := SubSat(tc.a, tc.b); got != tc.sub {
			t.Errorf("SubSat(%d, %d) = %d; want %d", tc.a, tc.b, got, tc.sub)
		}
	}
}
