package billing

import (
	"encoding/json"
	"testing"
)

// TestPriceTableModels lists a price file's models as it was written:
// tiers, cache multipliers, service tiers and task prices.
func TestPriceTableModels(t *testing.T) {
	pt, err := ParsePrices("p.json", []byte(`{"currency": "USD", "models": {
		"qwen3-max": {"currency": "CNY", "tiers": [{"up_to": 32000, "input": "6", "output": "24"}, {"input": "15.5", "output": 60}],
			"cache": {"creation": "1.5", "read": "0.2"}, "service_tiers": {"flex": "0.5"}},
		"text-embedding-3-small": {"embedding": "0.02"},
		"gpt-image-1": {"image": "0.04"},
		"sora-2": {"video_second": "0.10"},
		"veo-*": {"video_task": "0.5"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(pt.Models())
	want := `[{"pattern":"gpt-image-1","currency":"USD","cache":{"creation":"1.25","creation_1h":"2","read":"0.1"},"task":"image","task_price":"0.04"},` +
		`{"pattern":"qwen3-max","currency":"CNY","tiers":[{"up_to":32000,"input":"6","output":"24"},{"input":"15.5","output":"60"}],"cache":{"creation":"1.5","creation_1h":"2","read":"0.2"},"service_tiers":{"flex":"0.5"}},` +
		`{"pattern":"sora-2","currency":"USD","cache":{"creation":"1.25","creation_1h":"2","read":"0.1"},"task":"video_second","task_price":"0.1"},` +
		`{"pattern":"text-embedding-3-small","currency":"USD","tiers":[{"input":"0.02","output":"0"}],"embedding":true,"cache":{"creation":"1.25","creation_1h":"2","read":"0.1"}},` +
		`{"pattern":"veo-*","currency":"USD","cache":{"creation":"1.25","creation_1h":"2","read":"0.1"},"task":"video_task","task_price":"0.5"}]`
	if string(got) != want {
		t.Errorf("Models() =\n%s\nwant\n%s", got, want)
	}
}
