package integration

import (
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// TestBatchesFallBack: a batch of a model whose only deployment answers
// 503 (an air_mock with a fault) is submitted to the model's fallback,
// through real Caddy; it completes there, and each line is billed once
// at the fallback's batch price, not the model's.
func TestBatchesFallBack(t *testing.T) {
	prices := strings.Replace(batchPrices, `"mock-gpt":`, `"fb-batch":{"tiers":[{"input":"100","output":"100"}],"service_tiers":{"batch":"0.5"}},
	"mock-gpt":`, 1)
	startGateway(t, gatewayOptions{
		Extra:     "batches {\n\t\t\tpoll_interval 200ms\n\t\t}",
		Prices:    prices,
		Site:      faultMock("m503", "fault 1 503"),
		Providers: faultProvider("p503", "openai", "m503", ""),
		Models: `model fb-batch {
			to p503 down-model
			fallback mock-gpt
		}`,
	})
	key, _ := createKey(t, "batch-fallback")
	c := openai.NewClient(option.WithBaseURL(baseURL+"/v1/"), option.WithAPIKey(key), option.WithMaxRetries(0))
	b := runBatch(t, c, batchLines("fb-batch", 3))
	if b.Status != openai.BatchStatusCompleted || b.RequestCounts.Completed != 3 || b.OutputFileID == "" {
		t.Fatalf("batch %+v, want completed by the fallback", b)
	}
	recs := waitLedger(t, "batch-fallback", 3)
	if len(recs) != 3 {
		t.Fatalf("%d records, want 3", len(recs))
	}
	for _, r := range recs {
		if r.Endpoint != "batch" || r.Model != "fb-batch" || r.ServedModel != "mock-gpt" || r.Provider != "mock" || !r.Priced ||
			r.Usage.Output == 0 || !sameDecimal(r.Cost, batchCost(r).String()) {
			t.Errorf("record %+v, want a line served by mock-gpt at its batch cost %s", r, batchCost(r))
		}
	}
}
