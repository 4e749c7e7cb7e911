package billing

import (
	"encoding/json"
	"math"
	"math/rand"
	"strings"
	"testing"

	"github.com/shopspring/decimal"
)

func TestAmountString(t *testing.T) {
	for i, tc := range []struct {
		a    Amount
		want string
	}{
		{0, "0.000000000"},
		{123_450, "0.000123450"},
		{1, "0.000000001"},
		{1_500_000_000, "1.500000000"},
		{-1_500_000_000, "-1.500000000"},
		{math.MaxInt64, "9223372036.854775807"},
		{math.MinInt64, "-9223372036.854775808"},
	} {
		if got := tc.a.String(); got != tc.want {
			t.Errorf("Test %d: %d.String() = %q, want %q", i, int64(tc.a), got, tc.want)
		}
	}
}

func TestParseAmount(t *testing.T) {
	for i, tc := range []struct {
		in   string
		want Amount
		err  string
	}{
		{in: "10", want: 10_000_000_000},
		{in: " 0.5 ", want: 500_000_000},
		{in: "0.000000001", want: 1},
		{in: "-2.25", want: -2_250_000_000},
		{in: "1e-3", want: 1_000_000},
		{in: "9223372036.854775807", want: math.MaxInt64},
		{in: "", err: "empty amount"},
		{in: "ten", err: "not a decimal number"},
		{in: "0.0000000001", err: "more than 9 decimal places"},
		{in: "9223372036.854775808", err: "out of range"},
	} {
		got, err := ParseAmount(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("Test %d: ParseAmount(%q) error %v, want %q", i, tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("Test %d: ParseAmount(%q) = %d, %v; want %d", i, tc.in, got, err, tc.want)
		}
	}
}

func TestAmountRoundTrip(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	for i := 0; i < 1000; i++ {
		a := Amount(r.Int63() - r.Int63())
		back, err := ParseAmount(a.String())
		if err != nil || back != a {
			t.Fatalf("Test %d: %d → %q → %d, %v", i, int64(a), a.String(), back, err)
		}
		js, _ := json.Marshal(a)
		var dec Amount
		if err := json.Unmarshal(js, &dec); err != nil || dec != a {
			t.Fatalf("Test %d: JSON %s → %d, %v", i, js, dec, err)
		}
	}
	var lim Limits
	if err := json.Unmarshal([]byte(`{"monthly":12.5,"total":"100"}`), &lim); err != nil {
		t.Fatal(err)
	}
	if lim.Monthly != 12_500_000_000 || lim.Total != 100_000_000_000 {
		t.Errorf("limits decoded as %+v", lim)
	}
}

// decimalQuote computes a quote's cost from the price strings with decimals
// only, as the reference for Quote's integer fast path.
func decimalQuote(in, out, creation, read string, u Usage) Amount {
	d := func(s string) decimal.Decimal { return decimal.RequireFromString(s) }
	inD := d(in)
	sum := decimal.NewFromInt(u.Input).Mul(inD).
		Add(decimal.NewFromInt(u.CacheCreation).Mul(d(creation)).Mul(inD)).
		Add(decimal.NewFromInt(u.CacheRead).Mul(d(read)).Mul(inD)).
		Add(decimal.NewFromInt(u.Output).Mul(d(out)))
	return amountFromNanos(sum.Shift(-6).Shift(9)) // per million tokens, in nanos
}

// randomPrice returns a price with up to 6 decimals.
func randomPrice(r *rand.Rand) string {
	return decimal.New(r.Int63n(100_000_000), -int32(r.Intn(7))).String()
}

func TestQuoteMatchesDecimalReference(t *testing.T) {
	r := rand.New(rand.NewSource(42))
	for i := 0; i < 2000; i++ {
		in, out := randomPrice(r), randomPrice(r)
		creation, read := decimal.New(r.Int63n(400), -2).String(), decimal.New(r.Int63n(100), -2).String()
		src := `{"currency":"USD","models":{"m":{"tiers":[{"input":"` + in + `","output":"` + out +
			`"}],"cache":{"creation":"` + creation + `","read":"` + read + `"}}}}`
		pt := mustPrices(t, src)
		u := Usage{Input: r.Int63n(2_000_000), CacheCreation: r.Int63n(200_000), CacheRead: r.Int63n(2_000_000), Output: r.Int63n(200_000)}
		if got, want := pt.Quote("m", u).Cost, decimalQuote(in, out, creation, read, u); got != want {
			t.Fatalf("Test %d: prices %s %s ×%s ×%s usage %+v: Quote %d, reference %d", i, in, out, creation, read, u, got, want)
		}
	}
}

// FuzzQuote checks Quote against the decimal reference for any usage,
// including sums that overflow the integer fast path.
func FuzzQuote(f *testing.F) {
	f.Add(int64(50_000), int64(0), int64(0), int64(2_000), uint32(10), uint32(40))
	f.Add(int64(math.MaxInt64/2), int64(math.MaxInt64/2), int64(1), int64(1), uint32(999_999), uint32(1))
	f.Fuzz(func(t *testing.T, in, cc, cr, out int64, pin, pout uint32) {
		inP, outP := decimal.New(int64(pin), -3).String(), decimal.New(int64(pout), -3).String()
		pt := mustPrices(t, `{"currency":"USD","models":{"m":{"tiers":[{"input":"`+inP+`","output":"`+outP+`"}]}}}`)
		u := Usage{Input: max(in, 0), CacheCreation: max(cc, 0), CacheRead: max(cr, 0), Output: max(out, 0)}
		if got, want := pt.Quote("m", u).Cost, decimalQuote(inP, outP, "1.25", "0.1", u); got != want {
			t.Fatalf("prices %s %s usage %+v: Quote %d, reference %d", inP, outP, u, got, want)
		}
	})
}

func TestAmountShort(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want string
	}{
		{"0", "0.00"}, {"0.25", "0.25"}, {"1.5", "1.50"}, {"12", "12.00"},
		{"0.00012345", "0.00012345"}, {"0.000000001", "0.000000001"}, {"-1.5", "-1.50"}, {"3.100000010", "3.10000001"},
	} {
		a, err := ParseAmount(tc.in)
		if err != nil {
			t.Fatal(err)
		}
		if got := a.Short(); got != tc.want {
			t.Errorf("%s.Short() = %q, want %q", tc.in, got, tc.want)
		}
	}
}
