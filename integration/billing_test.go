package integration

import (
	"encoding/json"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"testing"

	"github.com/caddy-air/caddy-air/billing"
)

// chatPrices prices rec-model in two tiers, split at 1,000 prompt tokens.
const chatPrices = `{"currency":"USD","models":{"rec-model":{"tiers":[{"up_to":1000,"input":"1","output":"2"},{"input":"10","output":"20"}]}}}`

// TestChatCacheBilling: on /v1/chat/completions, enable_context_caching is
// forwarded untouched and the cache tokens the provider reports (DashScope's
// OpenAI-compatible shape here) are billed with the multipliers, in the tier
// that the total prompt selects.
func TestChatCacheBilling(t *testing.T) {
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":"c","object":"chat.completion","created":1,"model":"rec-model","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],`+
			`"usage":{"prompt_tokens":3000,"completion_tokens":100,"total_tokens":3100,"prompt_tokens_details":{"cached_tokens":1000,"cache_creation":{"ephemeral_5m_input_tokens":1500},"cache_creation_input_tokens":1500,"cache_type":"ephemeral"}}}`)
	})
	o := recOptions(up)
	o.Prices = chatPrices
	startGateway(t, o)
	key, _ := createKey(t, "cache-chat")
	body := `{"model":"rec-model","enable_context_caching":true,"messages":[{"role":"system","content":[{"type":"text","text":"long","cache_control":{"type":"ephemeral"}}]},{"role":"user","content":"q"}]}`
	if status, _, raw := postChat(t, key, body); status != http.StatusOK {
		t.Fatalf("status %d %s", status, raw)
	}
	if got := string(up.lastBody(t)); got != body {
		t.Fatalf("upstream got %s", got)
	}
	r := waitLedger(t, "cache-chat", 1)[0]
	u := r.Usage
	if u.Input != 500 || u.CacheCreation != 1500 || u.CacheRead != 1000 || u.Output != 100 || r.Tier != 1 {
		t.Fatalf("record %+v", r)
	}
	// 500×10 + 1500×1.25×10 + 1000×0.1×10 + 100×20 = 26750 per million.
	if !sameDecimal(r.Cost, "0.02675") {
		t.Fatalf("cost %s, want 0.02675", r.Cost)
	}
}

// TestBudgetsAndUsage sets limits through the admin API, hits them through
// the API, and reads the usage report through the CLI.
func TestBudgetsAndUsage(t *testing.T) {
	up := cannedUpstream(t)
	o := recOptions(up)
	o.Prices = chatPrices
	startGateway(t, o)
	key, keyID := createKey(t, "budgeted")
	chat := `{"model":"rec-model","messages":[{"role":"user","content":"x"}]}`

	// Rate limit: 2 requests a minute for this key.
	if status := adminJSON(t, http.MethodPut, "/air/budgets/key/"+keyID, `{"rpm":2}`, nil); status != http.StatusOK {
		t.Fatalf("set rpm: %d", status)
	}
	for i := 0; i < 2; i++ {
		if status, _, raw := postChat(t, key, chat); status != http.StatusOK {
			t.Fatalf("request %d: %d %s", i, status, raw)
		}
	}
	hits := up.hits.Load()
	status, hdr, raw := postChat(t, key, chat)
	if e := decodeError(t, raw); status != http.StatusTooManyRequests || e.code() != "rate_limit_exceeded" || hdr.Get("Retry-After") == "" {
		t.Fatalf("over rpm: %d %v %s", status, hdr, raw)
	}
	if up.hits.Load() != hits {
		t.Fatal("a rate-limited request reached the upstream")
	}

	// Spend limit: each request costs 0.00009 (120 prompt tokens pick tier 1:
	// 20×1 + 100 cached×0.1×1 + 30×2 per million). The two requests above
	// count too, so a monthly limit of 0.0002 admits one more and then
	// refuses.
	if status := adminJSON(t, http.MethodDelete, "/air/budgets/key/"+keyID, "", nil); status != http.StatusOK {
		t.Fatalf("delete: %d", status)
	}
	if status := adminJSON(t, http.MethodPut, "/air/budgets/user/budgeted", `{"monthly":"0.0002"}`, nil); status != http.StatusOK {
		t.Fatalf("set monthly: %d", status)
	}
	var refused int
	for i := 0; i < 4; i++ {
		status, _, raw := postChat(t, key, chat)
		if status == http.StatusTooManyRequests {
			if decodeError(t, raw).code() != "insufficient_quota" {
				t.Fatalf("over budget: %s", raw)
			}
			refused++
		}
	}
	if refused == 0 {
		t.Fatal("the monthly limit never refused a request")
	}
	recs := waitLedger(t, "budgeted", 2+4-refused)
	var total billing.Amount
	for _, r := range recs {
		c, err := billing.ParseAmount(r.Cost)
		if err != nil {
			t.Fatal(err)
		}
		total += c
	}
	limit, _ := billing.ParseAmount("0.0002")
	perRequest, _ := billing.ParseAmount("0.00009")
	if total > limit+perRequest {
		t.Fatalf("spent %s: more than the limit plus one request", total)
	}

	// The usage report, through the CLI.
	out, err := exec.Command(caddyBin, "air", "usage", "--user", "budgeted", "--json", "--address", adminAddr).Output()
	if err != nil {
		t.Fatalf("caddy air usage: %v", err)
	}
	var rep struct {
		Rows []struct {
			Day, Model string
			Requests   int64 `json:"requests"`
		} `json:"rows"`
		Totals []struct {
			Requests int64  `json:"requests"`
			Cost     string `json:"cost"`
		} `json:"totals"`
	}
	if err := json.Unmarshal(out, &rep); err != nil || len(rep.Rows) != 1 || rep.Rows[0].Model != "rec-model" || rep.Totals[0].Requests != int64(len(recs)) {
		t.Fatalf("usage report: %v %s", err, out)
	}
	table, err := exec.Command(caddyBin, "air", "usage", "--user", "budgeted", "--address", adminAddr).Output()
	if err != nil || !strings.Contains(string(table), "rec-model") || !strings.Contains(string(table), "USD") {
		t.Fatalf("usage table: %v %s", err, table)
	}
}
