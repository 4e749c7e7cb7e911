package integration

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/caddy-air/caddy-air/billing"
)

// scrape is the admin API's /metrics, parsed: each sample by its series,
// written as name{label="value",...} with labels sorted. A histogram gives
// name_sum and name_count series.
type scrape map[string]float64

// scrapeMetrics reads and parses admin /metrics.
func scrapeMetrics(t *testing.T) scrape {
	t.Helper()
	resp, err := http.Get("http://" + adminAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %d %s", resp.StatusCode, body)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(string(body)))
	if err != nil {
		t.Fatalf("parsing /metrics: %v", err)
	}
	out := scrape{}
	for name, mf := range fams {
		for _, m := range mf.GetMetric() {
			switch mf.GetType() {
			case dto.MetricType_COUNTER:
				out[series(name, m.GetLabel())] = m.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				out[series(name, m.GetLabel())] = m.GetGauge().GetValue()
			case dto.MetricType_HISTOGRAM:
				out[series(name+"_sum", m.GetLabel())] = m.GetHistogram().GetSampleSum()
				out[series(name+"_count", m.GetLabel())] = float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return out
}

// series names a series; labels with empty values are left out, as the
// exposition format does.
func series(name string, labels []*dto.LabelPair) string {
	var parts []string
	for _, l := range labels {
		if l.GetValue() != "" {
			parts = append(parts, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
		}
	}
	sort.Strings(parts)
	return name + "{" + strings.Join(parts, ",") + "}"
}

// sumOf sums the series of name whose labels include every one of want
// ("k=\"v\"" strings).
func (s scrape) sumOf(name string, want ...string) float64 {
	var total float64
next:
	for k, v := range s {
		if !strings.HasPrefix(k, name+"{") {
			continue
		}
		for _, w := range want {
			if !strings.Contains(k, w) {
				continue next
			}
		}
		total += v
	}
	return total
}

// delta is what the series of name matching want gained from before to s.
func (s scrape) delta(before scrape, name string, want ...string) float64 {
	return s.sumOf(name, want...) - before.sumOf(name, want...)
}

// TestMetricsScrape drives every kind of request through a real Caddy,
// then checks admin /metrics against what was done and against the ledger,
// before and after a reload.
func TestMetricsScrape(t *testing.T) {
	chat := cannedUpstream(t)
	claude := anthropicUpstream(t)
	var retryHits atomic.Int32
	flaky := newUpstream(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
		if retryHits.Add(1) == 1 {
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, recJSONResponse)
	})
	endless := newUpstream(t, func(w http.ResponseWriter, r *http.Request, _ []byte) {
		w.Header().Set("Content-Type", "text/event-stream")
		for k := 0; k < 3000; k++ {
			if _, err := io.WriteString(w, `data: {"id":"d","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"more words "},"finish_reason":null}]}`+"\n\n"); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	})
	opts := tasksOptions()
	opts.Providers = providerBlock("met", "openai", "", chat) + "\n\t\t" +
		providerBlock("met-anthropic", "anthropic", "", claude) + "\n\t\t" +
		providerBlock("met-retry", "openai", "\t\t\tretries 1", flaky) + "\n\t\t" +
		providerBlock("met-slow", "openai", "", endless)
	opts.Models = "model met-model met\n\t\tmodel met-claude met-anthropic\n\t\tmodel met-retry met-retry rec-model\n\t\tmodel met-slow met-slow"
	opts.Prices = `{"currency":"USD","models":{` +
		`"met-model":{"tiers":[{"input":"1","output":"2"}],"cache":{"read":"0.1"}},` +
		`"met-claude":{"tiers":[{"input":"3","output":"15"}]},` +
		`"met-retry":{"tiers":[{"input":"1","output":"2"}]},` +
		`"met-slow":{"tiers":[{"input":"1","output":"2"}]},` +
		`"mock-image":{"image":"0.04"},"mock-video":{"video_task":"0.5"}}}`
	g := startGateway(t, opts)
	const user = "metrics-user"
	key, _ := createKey(t, user)
	limitedKey, limitedID := createKey(t, user)
	if status := adminJSON(t, http.MethodPut, "/air/budgets/key/"+limitedID, `{"rpm":1}`, nil); status != http.StatusOK {
		t.Fatalf("set rpm: %d", status)
	}
	before := scrapeMetrics(t)

	// Chat, JSON and SSE.
	if status, _, raw := postChat(t, key, `{"model":"met-model","messages":[{"role":"user","content":"x"}]}`); status != http.StatusOK {
		t.Fatalf("chat: %d %s", status, raw)
	}
	if status, _, raw := postChat(t, key, `{"model":"met-model","stream":true,"messages":[{"role":"user","content":"x"}]}`); status != http.StatusOK || !strings.Contains(string(raw), "[DONE]") {
		t.Fatalf("chat stream: %d %s", status, raw)
	}
	// Messages.
	if status, _, raw := call(t, http.MethodPost, "/v1/messages", key, `{"model":"met-claude","max_tokens":64,"messages":[{"role":"user","content":"x"}]}`); status != http.StatusOK {
		t.Fatalf("messages: %d %s", status, raw)
	}
	// A request retried after a 429.
	if status, _, raw := postChat(t, key, `{"model":"met-retry","messages":[{"role":"user","content":"x"}]}`); status != http.StatusOK {
		t.Fatalf("retried chat: %d %s", status, raw)
	}
	// A rate-limited request: the key allows one a minute.
	for i, want := range []int{http.StatusOK, http.StatusTooManyRequests} {
		if status, _, raw := postChat(t, limitedKey, `{"model":"met-model","messages":[{"role":"user","content":"x"}]}`); status != want {
			t.Fatalf("limited request %d: %d %s", i, status, raw)
		}
	}
	// An unknown model.
	if status, _, _ := postChat(t, key, `{"model":"no-such-model-123","messages":[{"role":"user","content":"x"}]}`); status != http.StatusNotFound {
		t.Fatalf("unknown model: %d", status)
	}
	// A stream the client cancels midway.
	ctx, cancel := context.WithCancel(context.Background())
	resp := openStream(t, ctx, key, `{"model":"met-slow","stream":true,"messages":[{"role":"user","content":"a long story"}]}`)
	sc := bufio.NewScanner(resp.Body)
	for n := 0; n < 3 && sc.Scan(); {
		if strings.HasPrefix(sc.Text(), "data: ") {
			n++
		}
	}
	mid := scrapeMetrics(t)
	if v := mid.sumOf("air_open_streams", `provider="met-slow"`); v != 1 {
		t.Errorf("open streams during the stream = %v, want 1", v)
	}
	cancel()
	resp.Body.Close()
	// An image task and a video task.
	if status, task, raw := createTask(t, key, `{"model":"mock-image","prompt":"a fox","size":"256x256","n":1}`); status != http.StatusAccepted || task.Status != "succeeded" {
		t.Fatalf("image task: %d %s", status, raw)
	}
	status, video, raw := createTask(t, key, `{"model":"mock-video","prompt":"waves","seconds":"4"}`)
	if status != http.StatusAccepted {
		t.Fatalf("video task: %d %s", status, raw)
	}
	polls := 0 // each GET of the task is a read, counted too
	eventually(t, 30*time.Second, "the video task succeeds", func() bool {
		polls++
		_, v, _ := getTask(t, key, video.ID)
		return v.Status == "succeeded"
	})
	// 2 chats, messages, retried, limited ok, canceled stream, image, video.
	recs := waitLedger(t, user, 8)
	// A request is counted once its answer is written: wait for all 10
	// and the task's polls (the canceled stream's only once its record is
	// settled).
	var after scrape
	eventually(t, 10*time.Second, "every request is counted", func() bool {
		after = scrapeMetrics(t)
		return after.delta(before, "air_requests_total") == float64(10+polls)
	})
	if d := after.delta(before, "air_requests_total", `endpoint="tasks"`, `model="mock-video"`, `outcome="ok"`, `status="200"`); d != float64(polls) {
		t.Errorf("the video task's %d polls counted %v times", polls, d)
	}

	tests := []struct {
		name string
		want []string
		val  float64
	}{
		{"air_requests_total", []string{`operation="chat"`, `endpoint="chat_completions"`, `provider="met"`, `model="met-model"`, `outcome="ok"`, `status="200"`}, 3},
		{"air_requests_total", []string{`operation="chat"`, `model="met-model"`, `outcome="rejected"`, `status="429"`}, 1},
		{"air_requests_total", []string{`operation="chat"`, `provider="unknown"`, `model="unknown"`, `outcome="rejected"`, `status="404"`}, 1},
		{"air_requests_total", []string{`operation="chat"`, `endpoint="messages"`, `provider="met-anthropic"`, `model="met-claude"`, `outcome="ok"`}, 1},
		{"air_requests_total", []string{`provider="met-retry"`, `outcome="ok"`}, 1},
		{"air_requests_total", []string{`provider="met-slow"`, `outcome="partial"`, `status="200"`}, 1},
		{"air_requests_total", []string{`operation="generate_content"`, `endpoint="tasks"`, `model="mock-image"`, `outcome="ok"`, `status="202"`}, 1},
		{"air_requests_total", []string{`operation="generate_content"`, `endpoint="tasks"`, `model="mock-video"`, `outcome="ok"`, `status="202"`}, 1},
		{"air_rejections_total", []string{`reason="rate_limit"`}, 1},
		{"air_rejections_total", []string{`reason="invalid_request"`}, 1},
		{"air_upstream_attempts_total", []string{`provider="met-retry"`, `result="status_429"`}, 1},
		{"air_upstream_attempts_total", []string{`provider="met-retry"`, `result="ok"`}, 1},
		{"air_upstream_retries_total", []string{`provider="met-retry"`, `result="status_429"`}, 1},
		{"air_upstream_retries_total", []string{`provider="met-retry"`, `result="ok"`}, 0},
		{"air_upstream_attempts_total", []string{`provider="met"`, `result="ok"`}, 3},
		{"gen_ai_server_request_duration_seconds_count", []string{`gen_ai_request_model="met-model"`}, 3},
		{"gen_ai_server_request_duration_seconds_count", []string{`gen_ai_request_model="met-slow"`, `error_type="partial"`}, 1},
		{"gen_ai_server_time_to_first_token_seconds_count", []string{`gen_ai_request_model="met-model"`}, 1},
		{"gen_ai_server_time_to_first_token_seconds_count", []string{`gen_ai_request_model="met-slow"`}, 1},
		{"gen_ai_server_time_per_output_token_seconds_count", []string{`gen_ai_request_model="met-model"`}, 1},
		{"gen_ai_client_token_usage_count", []string{`gen_ai_request_model="met-retry"`, `gen_ai_response_model="rec-model"`, `gen_ai_token_type="input"`}, 1},
		{"gen_ai_client_token_usage_sum", []string{`gen_ai_operation_name="chat"`, `gen_ai_provider_name="met-anthropic"`, `gen_ai_token_type="output"`}, float64(ledgerSum(recs, "met-claude", func(r ledgerRecord) int64 { return r.Usage.Output }))},
		{"air_tasks_total", []string{`kind="image"`, `status="running"`}, 1},
		{"air_tasks_total", []string{`kind="image"`, `status="succeeded"`}, 1},
		{"air_tasks_total", []string{`kind="video"`, `status="running"`}, 1},
		{"air_tasks_total", []string{`kind="video"`, `status="succeeded"`}, 1},
		{"air_ledger_commit_duration_seconds_count", nil, -1}, // grew
		{"air_task_polls_total", []string{`provider="mock"`}, -1},
	}
	for i, tc := range tests {
		got := after.delta(before, tc.name, tc.want...)
		if tc.val == -1 {
			if got <= 0 {
				t.Errorf("Test %d: %s%v did not grow", i, tc.name, tc.want)
			}
			continue
		}
		if got != tc.val {
			t.Errorf("Test %d: %s%v grew by %v, want %v", i, tc.name, tc.want, got, tc.val)
		}
	}
	if v := after.sumOf("air_open_streams"); v != 0 {
		t.Errorf("open streams after every stream ended = %v", v)
	}
	for _, name := range []string{"air_store_size_bytes{}", "air_store_free_bytes{}", "air_store_free_margin_bytes{}"} {
		if after[name] <= 0 {
			t.Errorf("%s = %v, want > 0", name, after[name])
		}
	}
	if _, ok := after["air_ledger_queue_depth{}"]; !ok {
		t.Error("no air_ledger_queue_depth")
	}
	if _, ok := after["air_ledger_lag_seconds{}"]; !ok {
		t.Error("no air_ledger_lag_seconds")
	}

	// Tokens and cost equal the ledger's.
	for _, tt := range []struct {
		typ string
		get func(ledgerRecord) int64
	}{
		{"input", func(r ledgerRecord) int64 { return r.Usage.Input }},
		{"output", func(r ledgerRecord) int64 { return r.Usage.Output }},
		{"cache_read", func(r ledgerRecord) int64 { return r.Usage.CacheRead }},
		{"cache_creation", func(r ledgerRecord) int64 { return r.Usage.CacheCreation }},
		{"reasoning", func(r ledgerRecord) int64 { return r.Usage.Reasoning }},
	} {
		want := ledgerSum(recs, "", tt.get)
		if got := after.delta(before, "gen_ai_client_token_usage_sum", `gen_ai_token_type="`+tt.typ+`"`); got != float64(want) {
			t.Errorf("%s tokens: metrics %v, ledger %d", tt.typ, got, want)
		}
	}
	var cost billing.Amount
	for _, r := range recs {
		c, err := billing.ParseAmount(r.Cost)
		if err != nil {
			t.Fatal(err)
		}
		cost += c
	}
	if cost == 0 {
		t.Fatal("the ledger recorded no cost: the prices did not apply")
	}
	if got := after.delta(before, "air_cost_total", `currency="USD"`); math.Abs(got-float64(cost)/1e9) > 1e-9 {
		t.Errorf("cost: metrics %v, ledger %s", got, cost)
	}

	// A reload (with per-user metrics on): counters go on, nothing is
	// registered twice, and the next request adds to them.
	opts.Extra += "\n\t\tmetrics {\n\t\t\tper_user\n\t\t}"
	g.reload(opts)
	reloaded := scrapeMetrics(t)
	okChats := `model="met-model",outcome="ok"`
	counters := 0
	for series, v := range after {
		for _, name := range []string{"air_requests_total{", "air_cost_total{", "gen_ai_client_token_usage_sum{", "air_upstream_attempts_total{", "air_tasks_total{"} {
			if strings.HasPrefix(series, name) {
				counters++
				if got, ok := reloaded[series]; !ok || got < v {
					t.Errorf("%s went from %v to %v across the reload", series, v, got)
				}
			}
		}
	}
	if counters < 10 {
		t.Fatalf("only %d counter series to compare across the reload", counters)
	}
	if status, _, raw := postChat(t, key, `{"model":"met-model","messages":[{"role":"user","content":"x"}]}`); status != http.StatusOK {
		t.Fatalf("chat after the reload: %d %s", status, raw)
	}
	var final scrape
	eventually(t, 10*time.Second, "the request after the reload is counted", func() bool {
		final = scrapeMetrics(t)
		return final.sumOf("air_user_requests_total") > 0
	})
	if got := final.delta(after, "air_requests_total", `model="met-model"`, `outcome="ok"`); got != 1 {
		t.Errorf("%s grew by %v across the reload and one request, want 1", okChats, got)
	}
	if got := final.sumOf("air_user_requests_total", `user="`+user+`"`, `outcome="ok"`); got != 1 {
		t.Errorf("per-user requests after the reload = %v, want 1", got)
	}
	checkMetricsDocumented(t, final)
}

// checkMetricsDocumented fails for every caddy-air metric in s (air_… and
// gen_ai_… families) that the metrics reference (docs/operations/metrics.md)
// does not name, so that an operator finds each series the gateway exports
// explained there.
func checkMetricsDocumented(t *testing.T, s scrape) {
	t.Helper()
	readme, err := os.ReadFile(filepath.Join("..", "docs", "operations", "metrics.md"))
	if err != nil {
		t.Fatal(err)
	}
	families := map[string]bool{}
	for series := range s {
		name, _, _ := strings.Cut(series, "{")
		if !strings.HasPrefix(name, "air_") && !strings.HasPrefix(name, "gen_ai_") {
			continue
		}
		for _, suffix := range []string{"_sum", "_count"} {
			if base, ok := strings.CutSuffix(name, suffix); ok && (s.has(base+"_sum") && s.has(base+"_count")) {
				name = base
			}
		}
		families[name] = true
	}
	t.Logf("%d caddy-air metric families exported", len(families))
	if len(families) < 20 {
		t.Fatalf("only %d caddy-air metric families in the scrape: %v", len(families), families)
	}
	for name := range families {
		if !bytes.Contains(readme, []byte("`"+name+"`")) {
			t.Errorf("metric %s is exported but not named (in backquotes) in docs/operations/metrics.md", name)
		}
	}
}

// has reports whether s holds a series of the family name.
func (s scrape) has(name string) bool {
	for k := range s {
		if strings.HasPrefix(k, name+"{") {
			return true
		}
	}
	return false
}

// ledgerSum sums get over the records of model ("" for all).
func ledgerSum(recs []ledgerRecord, model string, get func(ledgerRecord) int64) int64 {
	var n int64
	for _, r := range recs {
		if model == "" || r.Model == model {
			n += get(r)
		}
	}
	return n
}
