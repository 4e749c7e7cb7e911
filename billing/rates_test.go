package billing

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/caddy-air/caddy-air/store"
)

// ratedPrices are testPrices with exchange rates into USD.
var ratedPrices = strings.Replace(testPrices, `"currency": "USD",`, `"currency": "USD", "rates": {"CNY": "0.14", "EUR": "1.08"},`, 1)

// TestConvert checks conversions between currencies: exact, rounded up to
// a nano unit against the client, and refused without a rate.
func TestConvert(t *testing.T) {
	pt := mustPrices(t, ratedPrices)
	for i, tc := range []struct {
		a        Amount
		from, to string
		want     Amount
		ok       bool
	}{
		{1_000_000_000, "CNY", "USD", 140_000_000, true},
		{1, "CNY", "USD", 1, true},                       // 0.14 nano rounds up
		{1_000_000_000, "USD", "EUR", 925_925_926, true}, // 0.925925925925… up
		{1_000_000_000, "CNY", "EUR", 129_629_630, true}, // 0.14/1.08 = 0.1296296296… up
		{7, "USD", "USD", 7, true},
		{1<<63 - 1, "EUR", "USD", 1<<63 - 1, true}, // saturates
		{5, "JPY", "USD", 0, false},
		{5, "USD", "JPY", 0, false},
	} {
		got, ok := pt.convert(tc.a, tc.from, tc.to)
		if got != tc.want || ok != tc.ok {
			t.Errorf("Test %d: convert(%d %s → %s) = %d, %v; want %d, %v", i, tc.a, tc.from, tc.to, got, ok, tc.want, tc.ok)
		}
	}
}

// TestParseRates checks the price file's rates and what it refuses.
func TestParseRates(t *testing.T) {
	pt := mustPrices(t, ratedPrices)
	if got := strings.Join(pt.Currencies(), ","); got != "CNY,EUR,USD" {
		t.Errorf("Currencies = %s", got)
	}
	for _, cur := range []string{"", "USD", "CNY", "EUR"} {
		if err := pt.CheckLimitCurrency(cur); err != nil {
			t.Errorf("CheckLimitCurrency(%q) = %v", cur, err)
		}
	}
	for cur, want := range map[string]string{"XYZ": "not a currency of the price file", "usd": "not a currency of the price file"} {
		if err := pt.CheckLimitCurrency(cur); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("CheckLimitCurrency(%q) = %v, want %q", cur, err, want)
		}
	}
	// Without rates, a USD limit cannot count qwen3-max's CNY prices.
	if err := mustPrices(t, testPrices).CheckLimitCurrency("USD"); err == nil || !strings.Contains(err.Error(), "priced in CNY") {
		t.Errorf("USD limit without a CNY rate: %v", err)
	}
	for i, bad := range []string{
		`{"currency": "USD", "rates": {"CNY": "0"}, "models": {}}`,
		`{"currency": "USD", "rates": {"CNY": "-1"}, "models": {}}`,
		`{"currency": "USD", "rates": {"cny": "0.14"}, "models": {}}`,
		`{"currency": "USD", "rates": {"USD": "2"}, "models": {}}`,
		`{"currency": "USD", "rates": ["CNY"], "models": {}}`,
		`{"rates": {"CNY": "0.14"}, "models": {}}`,
	} {
		if _, err := ParsePrices("p.json", []byte(bad)); err == nil || !strings.Contains(err.Error(), "rates") {
			t.Errorf("Test %d: %s: %v, want an error about rates", i, bad, err)
		}
	}
}

// TestSpendLimitAcrossCurrencies checks that a USD limit bounds the spend
// on CNY-priced models by the price file's rate, where it let 8 of 8
// through before.
func TestSpendLimitAcrossCurrencies(t *testing.T) {
	ctx := context.Background()
	te := newTestEngine(t)
	e := NewEngine(mustPrices(t, ratedPrices), te.Ledger(), te.Budgets())
	// qwen3-max: 1000 in × 6 + 100 out × 24 per million = 0.0084 CNY =
	// 0.001176 USD a request.
	if err := te.Budgets().SetLimits(ctx, ScopeKey, "key_1", Limits{Total: 2_000_000}); err != nil {
		t.Fatal(err)
	}
	admitted := 0
	for i := range 8 {
		res, aerr := e.Admit(ctx, Subject{KeyID: "key_1"}, "qwen3-max", claudeUsage)
		if aerr != nil {
			if code(aerr) != "insufficient_quota" || !strings.Contains(aerr.Message, "0.002000000 USD") {
				t.Fatalf("request %d: %v", i, aerr)
			}
			continue
		}
		admitted++
		rec := res.Settle(Record{Usage: claudeUsage, Outcome: OutcomeOK})
		if rec.Currency != "CNY" || rec.Cost != 8_400_000 {
			t.Fatalf("record %s %s", rec.Cost, rec.Currency)
		}
	}
	if admitted != 2 {
		t.Errorf("%d of 8 CNY requests admitted on a 0.002 USD limit, want 2 (0.001176 USD each)", admitted)
	}
}

// TestSharedSpendLimitAcrossCurrencies checks the same on budgets shared
// through PostgreSQL: slices count CNY costs converted, and the database
// counts the CNY spend at the rate when it grants a slice, so that the
// instances together stop at the USD limit.
func TestSharedSpendLimitAcrossCurrencies(t *testing.T) {
	ctx := context.Background()
	key := store.Subject{Scope: store.ScopeKey, ID: "key_1"}
	const perRequest = 1_176_000 // 0.001176 USD
	limit := Amount(perRequest*10 + perRequest/2)
	ins := newInstances(t, 2, 3*time.Second, map[store.Subject]store.Limits{key: {Currency: "USD", Total: int64(limit)}})
	pt := mustPrices(t, ratedPrices)
	admitted, refused := 0, 0
	for i := 0; refused < 4 && i < 100; i++ {
		in := ins[i%2]
		e := NewEngine(pt, in.Ledger(), in.Budgets())
		res, aerr := e.Admit(ctx, Subject{KeyID: "key_1"}, "qwen3-max", claudeUsage)
		if aerr != nil {
			if code(aerr) != "insufficient_quota" {
				t.Fatalf("request %d: %v", i, aerr)
			}
			// The other instance's slice may hold the room: it returns
			// it once idle (and this one asks again after refusedFor).
			refused++
			time.Sleep(time.Second) // an idle open slice closes after ttl/3
			continue
		}
		refused = 0
		admitted++
		res.Settle(Record{Endpoint: "chat", Usage: claudeUsage, Source: SourceReported, Status: 200, Outcome: OutcomeOK})
		// Each instance's slices go back, so that the next Reserve
		// counts the CNY spend in the database.
		if err := in.Ledger().Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if admitted != 10 {
		t.Errorf("%d CNY requests admitted on a limit of %s USD, want 10 (%d nano-USD each)", admitted, limit, perRequest)
	}
}
