package caddymodule

import (
	"strings"
	"testing"

	"github.com/caddy-air/caddy-air/billing"
)

func TestPrintPrices(t *testing.T) {
	pt, err := billing.ParsePrices("p.json", []byte(`{"currency": "USD", "models": {
		"chat-x": {"tiers": [{"up_to": 1000, "input": "1", "output": "2"}, {"input": "3", "output": "4"}], "service_tiers": {"priority": "2", "flex": "0.5"},
			"audio": {"input": "40", "output": "80"}, "tools": {"web_search": "0.01", "code_session": "0.03"}},
		"emb": {"embedding": "0.02"}, "img-*": {"image": "0.04"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := printPrices(&b, &pricesReport{Source: "p.json", Currency: "USD", Models: pt.Models()}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"p.json (default currency USD)", "1000: 1/2, rest: 3/4", "1.25/2/0.1", "flex x0.5, priority x2", "embedding 0.02", "0.04 per image",
		"audio in 40, audio out 80, code_session 0.03, web_search 0.01"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("caddy air prices lacks %q:\n%s", want, b.String())
		}
	}
	b.Reset()
	_ = printPrices(&b, &pricesReport{})
	if !strings.Contains(b.String(), "every model is unpriced") {
		t.Errorf("without a price file: %q", b.String())
	}
}
