package billing

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"net/http"
	"regexp"
	"sort"

	"github.com/shopspring/decimal"
	"github.com/tidwall/gjson"

	"github.com/caddy-air/caddy-air/apierror"
	"github.com/caddy-air/caddy-air/store"
)

// Exchange rates let a spend limit in one currency bound the spend on
// models priced in another. The price file's top-level "rates" gives, per
// currency, the value of one unit of it in the file's top-level currency
// (the base):
//
//	{"currency": "USD", "rates": {"CNY": "0.14", "EUR": "1.08"}, "models": {…}}
//
// says 1 CNY = 0.14 USD and 1 EUR = 1.08 USD. A cost c in currency C counts
// against a limit in currency L as c × rate(C) / rate(L) (rate(base) = 1),
// computed exactly on the whole sum of spend per currency and rounded up to
// a nano unit of L: a conversion never makes spend look smaller. A limit
// whose currency cannot count every priced model's cost (a model in a
// currency with no rate, or a limit in a currency the file does not know)
// is refused when it is set; should a later price file make it so, its
// subjects' requests for those models are refused (403) rather than let
// through unbounded.

// currencyCode is the form of a currency code: three capital letters, as
// ISO 4217.
var currencyCode = regexp.MustCompile(`^[A-Z]{3}$`)

// parseRates parses the top-level "rates" object.
func parseRates(v gjson.Result) (map[string]decimal.Decimal, error) {
	if !v.IsObject() {
		return nil, errors.New(`rates: must be an object such as {"CNY": "0.14"}`)
	}
	out := map[string]decimal.Decimal{}
	var err error
	v.ForEach(func(k, f gjson.Result) bool {
		switch {
		case !currencyCode.MatchString(k.Str):
			err = fmt.Errorf("rates: %q is not a currency code such as \"CNY\"", k.Str)
		case out[k.Str].Sign() != 0:
			err = fmt.Errorf("rates: %s listed twice", k.Str)
		default:
			var d decimal.Decimal
			if d, err = parsePrice(f); err == nil && d.Sign() == 0 {
				err = errors.New("is zero")
			}
			if err != nil {
				err = fmt.Errorf("rates: %s: %w", k.Str, err)
			}
			out[k.Str] = d
		}
		return err == nil
	})
	return out, err
}

// checkRates checks the rates against the rest of the price file.
func (pt *PriceTable) checkRates() error {
	if len(pt.rates) == 0 {
		return nil
	}
	if pt.currency == "" {
		return errors.New("rates: set the top-level currency, which the rates are in")
	}
	if r, ok := pt.rates[pt.currency]; ok && !r.Equal(decimal.NewFromInt(1)) {
		return fmt.Errorf("rates: %s is the top-level currency; its rate can only be 1", pt.currency)
	}
	return nil
}

// rate is the value of one unit of currency in the base currency.
func (pt *PriceTable) rate(currency string) (decimal.Decimal, bool) {
	if pt == nil {
		return decimal.Decimal{}, false
	}
	if currency == pt.currency && currency != "" {
		return decimal.NewFromInt(1), true
	}
	r, ok := pt.rates[currency]
	return r, ok
}

// Currencies lists, sorted, the currencies the price file knows: its
// top-level currency, every model's, and every currency it has a rate for.
func (pt *PriceTable) Currencies() []string {
	if pt == nil {
		return nil
	}
	seen := map[string]bool{}
	if pt.currency != "" {
		seen[pt.currency] = true
	}
	for c := range pt.rates {
		seen[c] = true
	}
	for _, mp := range pt.exact {
		seen[mp.currency] = true
	}
	for _, mp := range pt.globs {
		seen[mp.currency] = true
	}
	out := make([]string, 0, len(seen))
	for c := range seen {
		out = append(out, c)
	}
	sort.Strings(out)
	return out
}

// CheckLimitCurrency returns an error unless a spend limit in currency
// ("" is the price file's currency) can count the cost of every priced
// model: the currency is known to the price file, and every model is
// priced in it or converts to it by the rates.
func (pt *PriceTable) CheckLimitCurrency(currency string) error {
	if currency == "" {
		currency = pt.Currency()
		if currency == "" {
			return errors.New("currency: the price file has no top-level currency; name the limits' currency")
		}
	}
	known := pt.Currencies()
	i := sort.SearchStrings(known, currency)
	if i == len(known) || known[i] != currency {
		return fmt.Errorf("currency: %q is not a currency of the price file (it knows %v)", currency, known)
	}
	for _, c := range known {
		if _, ok := pt.factor(c, currency); !ok {
			return fmt.Errorf("currency: limits in %s cannot count the spend on models priced in %s: give both an exchange rate in the price file's \"rates\"", currency, c)
		}
	}
	return nil
}

// ratio is the exact factor num/den that converts an amount between two
// currencies.
type ratio struct{ num, den *big.Int }

// factor returns the ratio that converts amounts in from into amounts in
// to, or false if the rates do not say.
func (pt *PriceTable) factor(from, to string) (ratio, bool) {
	if from == to {
		return ratio{}, true
	}
	rf, ok1 := pt.rate(from)
	rt, ok2 := pt.rate(to)
	if !ok1 || !ok2 {
		return ratio{}, false
	}
	// rf/rt with both as integer coefficients × 10^exponent.
	num, den := new(big.Int).Set(rf.Coefficient()), new(big.Int).Set(rt.Coefficient())
	if e := rf.Exponent() - rt.Exponent(); e > 0 {
		num.Mul(num, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(e)), nil))
	} else if e < 0 {
		den.Mul(den, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(-e)), nil))
	}
	return ratio{num, den}, true
}

// convert returns a, in currency from, in currency to, rounded up to a
// nano unit and saturating at the bounds of an Amount; false if the rates
// cannot convert it.
func (pt *PriceTable) convert(a Amount, from, to string) (Amount, bool) {
	if from == to || a == 0 {
		return a, true
	}
	f, ok := pt.factor(from, to)
	if !ok {
		return 0, false
	}
	return f.apply(a), true
}

// apply returns a × r, rounded up (towards +∞) and saturating.
func (r ratio) apply(a Amount) Amount {
	if r.num == nil {
		return a
	}
	n := new(big.Int).Mul(big.NewInt(int64(a)), r.num)
	q, m := new(big.Int).DivMod(n, r.den, new(big.Int)) // Euclidean: m ≥ 0, q rounds down
	if m.Sign() > 0 {
		q.Add(q, big.NewInt(1))
	}
	switch {
	case !q.IsInt64() && q.Sign() > 0:
		return Amount(math.MaxInt64)
	case !q.IsInt64():
		return Amount(math.MinInt64)
	}
	return Amount(q.Int64())
}

// storeRates are the factors that convert every other currency the price
// file knows into currency, for the backend's Reserve.
func (pt *PriceTable) storeRates(currency string) []store.Rate {
	var out []store.Rate
	for _, c := range pt.Currencies() {
		if c == currency {
			continue
		}
		if f, ok := pt.factor(c, currency); ok {
			out = append(out, store.Rate{Currency: c, Num: f.num.String(), Den: f.den.String()})
		}
	}
	return out
}

// unconvertible is the error of a request for a model priced in a
// currency that a spend limit of its subject cannot count.
func unconvertible(sk subjectKey, limitCurrency, currency string) *apierror.Error {
	msg := fmt.Sprintf("The spend limit of %s is in %s and this model is priced in %s, which the price file gives no exchange rate for: the gateway cannot bound its cost, so it refuses the request. Ask the operator to add a rate.",
		describe(sk), limitCurrency, currency)
	return apierror.New(http.StatusForbidden, apierror.TypePermission, "budget_currency_unconvertible", msg)
}
