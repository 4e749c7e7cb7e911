package billing

import "testing"

func TestQuoteRecordPricesTheDeploymentThatAnswered(t *testing.T) {
	pt, err := ParsePrices("t", []byte(`{"currency":"USD","models":{
		"gpt-4o":{"tiers":[{"input":"1","output":"1"}]},
		"azure/gpt-4o-prod":{"tiers":[{"input":"2","output":"2"}]},
		"claude":{"tiers":[{"input":"3","output":"3"}]}}}`))
	if err != nil {
		t.Fatal(err)
	}
	u := Usage{Input: 1_000_000}
	for _, tc := range []struct {
		name              string
		deployment, model string
		want              string
	}{
		{"deployment without its own price: the model's", "openai/gpt-4o", "", "1.000000000"},
		{"deployment with its own price", "azure/gpt-4o-prod", "", "2.000000000"},
		{"fallback model", "anthropic/claude-x", "claude", "3.000000000"},
	} {
		q := pt.QuoteRecord(&Record{Model: "gpt-4o", Deployment: tc.deployment, ServedModel: tc.model, Usage: u, Outcome: OutcomeOK})
		if got := q.Cost.String(); got != tc.want {
			t.Errorf("%s: cost %s, want %s", tc.name, got, tc.want)
		}
	}
}
