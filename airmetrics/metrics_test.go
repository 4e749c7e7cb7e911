package airmetrics

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/caddy-air/caddy-air/routing"
)

// testConfig has an exact model, a glob and an aliased model.
var testConfig = Config{
	Providers: []string{"openai", "anthropic"},
	Models: []Model{
		{Pattern: "gpt-x", Provider: "openai", Operation: "chat"},
		{Pattern: "qwen3-*", Provider: "openai", Operation: "chat"},
		{Pattern: "claude-y", Provider: "anthropic", ResponseModel: "claude-y-2026", Operation: "messages"},
		{Pattern: "img", Provider: "openai", Operation: "image"},
	},
}

// gather returns the families of reg by name.
func gather(t testing.TB, reg prometheus.Gatherer) map[string]*dto.MetricFamily {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("gathering: %v", err)
	}
	out := make(map[string]*dto.MetricFamily, len(mfs))
	for _, mf := range mfs {
		out[mf.GetName()] = mf
	}
	return out
}

// series counts the series of every family.
func series(t testing.TB, reg prometheus.Gatherer) int {
	n := 0
	for _, mf := range gather(t, reg) {
		n += len(mf.GetMetric())
	}
	return n
}

// find returns the metric of family name whose labels include want.
func find(t testing.TB, fams map[string]*dto.MetricFamily, name string, want map[string]string) *dto.Metric {
	t.Helper()
	mf := fams[name]
	if mf == nil {
		t.Fatalf("no family %s", name)
	}
next:
	for _, m := range mf.GetMetric() {
		labels := map[string]string{}
		for _, lp := range m.GetLabel() {
			labels[lp.GetName()] = lp.GetValue()
		}
		for k, v := range want {
			if labels[k] != v {
				continue next
			}
		}
		return m
	}
	t.Fatalf("no series %s%v", name, want)
	return nil
}

func TestRegisterTwiceAndAcrossRegistries(t *testing.T) {
	m := New()
	reg1 := prometheus.NewPedanticRegistry()
	for i := 0; i < 2; i++ {
		if err := m.Register(reg1, true); err != nil {
			t.Fatalf("Test %d: registering: %v", i, err)
		}
	}
	o := m.Bind(testConfig)
	o.Route("gpt-x").Observe(&Request{Outcome: OutcomeOK, Status: 200, Duration: time.Second})
	// A reload: a new registry, the same collectors, a new binding.
	reg2 := prometheus.NewPedanticRegistry()
	if err := m.Register(reg2, false); err != nil {
		t.Fatalf("registering in a new registry: %v", err)
	}
	o2 := m.Bind(testConfig)
	o2.Route("gpt-x").Observe(&Request{Outcome: OutcomeOK, Status: 200, Duration: time.Second})
	got := find(t, gather(t, reg2), "air_requests_total", map[string]string{"model": "gpt-x", "outcome": "ok", "status": "200"})
	if v := got.GetCounter().GetValue(); v != 2 {
		t.Fatalf("requests after the reload = %v, want 2 (the counter goes on)", v)
	}
	if _, ok := gather(t, reg2)["air_user_requests_total"]; ok {
		t.Fatal("per-user metrics registered without per_user")
	}
	// Another collector under a taken name is still an error.
	if err := New().Register(reg2, false); err == nil {
		t.Fatal("registering other collectors under the same names succeeded")
	}
}

func TestObserveRecordsEverySeries(t *testing.T) {
	m := New()
	reg := prometheus.NewPedanticRegistry()
	if err := m.Register(reg, true); err != nil {
		t.Fatal(err)
	}
	o := m.Bind(Config{Providers: testConfig.Providers, Models: testConfig.Models, PerUser: true})
	r := o.Route("claude-y")
	r.StreamOpened()
	r.Observe(&Request{
		Outcome: OutcomeOK, Status: 200, Duration: 3 * time.Second, FirstByte: time.Second,
		Tokens:   Tokens{Input: 100, Output: 21, CacheRead: 50, CacheCreation: 10, Reasoning: 5},
		Currency: "USD", CostNanos: 1_234_500_000, User: "alice", KeyID: "key_1", Unpriced: []string{"web_search"},
	})
	r.Unpriced([]string{"web_search", "audio_input"}) // a task's or background response's charge
	r.Observe(&Request{Outcome: OutcomeTimeout, Status: 504, Duration: 30 * time.Second, User: "alice", KeyID: "key_1"})
	r.Reject("messages", 429, ReasonBudget)
	o.Reject("chat", 404, ReasonInvalidRequest)
	o.Reject("/v1/images/generations", 401, ReasonAuth)
	o.Route("gpt-x").Observe(&Request{Endpoint: "responses", Outcome: OutcomeOK, Status: 200, Duration: time.Second})
	o.Route("img").Observe(&Request{Endpoint: "images", Outcome: OutcomeOK, Status: 200, Duration: time.Second})
	o.Attempt("anthropic", ResultStatus5xx, true)
	o.Attempt("anthropic", ResultOK, false)
	o.TaskStatus("image", "succeeded")
	o.TaskPolled("openai", true)
	m.ObserveCommit(0.002)
	m.BreakerState("openai", "openai/gpt-4o", "http://up/v1", 1, 2)
	m.KeyRejected("openai", 0)
	m.Cooldown("openai", "openai/gpt-4o")
	m.Fallback("claude-y", "claude-z")
	m.SetStateSource(func() (State, bool) {
		return State{LedgerQueued: 3, LedgerLagSeconds: 0.5, LedgerUnreadable: 2, StoreBytes: 4096, FreeBytes: 1 << 30, MarginBytes: 64 << 20, RequestLogsDropped: 7, RequestLogsFailed: 1}, true
	})
	f := gather(t, reg)
	gen := map[string]string{lOperation: "chat", lProvider: "anthropic", lReqModel: "claude-y", lRespModel: "claude-y-2026"}
	with := func(k, v string) map[string]string {
		out := map[string]string{k: v}
		for kk, vv := range gen {
			out[kk] = vv
		}
		return out
	}
	tests := []struct {
		name   string
		labels map[string]string
		get    func(*dto.Metric) float64
		want   float64
	}{
		{"gen_ai_client_token_usage", with(lTokenType, "input"), hsum, 100},
		{"gen_ai_client_token_usage", with(lTokenType, "output"), hsum, 21},
		{"gen_ai_client_token_usage", with(lTokenType, "cache_read"), hsum, 50},
		{"gen_ai_client_token_usage", with(lTokenType, "cache_creation"), hsum, 10},
		{"gen_ai_client_token_usage", with(lTokenType, "reasoning"), hsum, 5},
		{"gen_ai_server_request_duration_seconds", with(lErrorType, ""), hsum, 3},
		{"gen_ai_server_request_duration_seconds", with(lErrorType, "timeout"), hsum, 30},
		{"gen_ai_server_time_to_first_token_seconds", gen, hsum, 1},
		{"gen_ai_server_time_per_output_token_seconds", gen, hsum, 0.1},
		{"air_requests_total", map[string]string{"operation": "chat", "endpoint": "messages", "model": "claude-y", "outcome": "ok", "status": "200"}, counter, 1},
		{"air_requests_total", map[string]string{"operation": "chat", "endpoint": "responses", "model": "gpt-x", "outcome": "ok", "status": "200"}, counter, 1},
		{"air_requests_total", map[string]string{"operation": "generate_content", "endpoint": "images", "model": "img", "outcome": "ok", "status": "200"}, counter, 1},
		{"gen_ai_server_request_duration_seconds", map[string]string{lOperation: "generate_content", lReqModel: "img", lErrorType: ""}, hsum, 1},
		{"air_requests_total", map[string]string{"operation": "generate_content", "endpoint": "images", "model": Unknown, "outcome": "rejected", "status": "401"}, counter, 1},
		{"air_rejections_total", map[string]string{"reason": "auth"}, counter, 1},
		{"air_requests_total", map[string]string{"model": "claude-y", "outcome": "timeout", "status": "504"}, counter, 1},
		{"air_requests_total", map[string]string{"model": "claude-y", "outcome": "rejected", "status": "429"}, counter, 1},
		{"air_requests_total", map[string]string{"operation": "chat", "endpoint": "chat_completions", "provider": Unknown, "model": Unknown, "outcome": "rejected", "status": "404"}, counter, 1},
		{"air_cost_total", map[string]string{"currency": "USD", "provider": "anthropic", "model": "claude-y"}, counter, 1.2345},
		{"air_unpriced_charges_total", map[string]string{"provider": "anthropic", "model": "claude-y", "charge": "web_search"}, counter, 2},
		{"air_unpriced_charges_total", map[string]string{"provider": "anthropic", "model": "claude-y", "charge": "audio_input"}, counter, 1},
		{"air_upstream_attempts_total", map[string]string{"provider": "anthropic", "result": "status_5xx"}, counter, 1},
		{"air_upstream_attempts_total", map[string]string{"provider": "anthropic", "result": "ok"}, counter, 1},
		{"air_upstream_retries_total", map[string]string{"provider": "anthropic", "result": "status_5xx"}, counter, 1},
		{"air_upstream_retries_total", map[string]string{"provider": "anthropic", "result": "ok"}, counter, 0},
		{"air_rejections_total", map[string]string{"reason": "budget"}, counter, 1},
		{"air_open_streams", map[string]string{"operation": "chat", "provider": "anthropic"}, gauge, 1},
		{"air_ledger_commit_duration_seconds", nil, hsum, 0.002},
		{"air_ledger_queue_depth", nil, gauge, 3},
		{"air_ledger_lag_seconds", nil, gauge, 0.5},
		{"air_ledger_unreadable_regions", nil, gauge, 2},
		{"air_store_size_bytes", nil, gauge, 4096},
		{"air_store_free_bytes", nil, gauge, 1 << 30},
		{"air_store_free_margin_bytes", nil, gauge, 64 << 20},
		{"air_request_logs_dropped_total", nil, counter, 7},
		{"air_request_logs_failed_total", nil, counter, 1},
		{"air_tasks_total", map[string]string{"kind": "image", "status": "succeeded"}, counter, 1},
		{"air_task_polls_total", map[string]string{"provider": "openai"}, counter, 1},
		{"air_task_poll_errors_total", map[string]string{"provider": "openai"}, counter, 1},
		{"air_upstream_breaker_state", map[string]string{"provider": "openai", "deployment": "openai/gpt-4o", "base_url": "http://up/v1", "key": "1"}, gauge, 2},
		{"air_upstream_keys_rejected_total", map[string]string{"provider": "openai", "key": "0"}, counter, 1},
		{"air_upstream_cooldowns_total", map[string]string{"provider": "openai", "deployment": "openai/gpt-4o"}, counter, 1},
		{"air_fallbacks_total", map[string]string{"model": "claude-y", "fallback": "claude-z"}, counter, 1},
		{"air_user_requests_total", map[string]string{"user": "alice", "key_id": "key_1", "outcome": "ok"}, counter, 1},
		{"air_user_tokens_total", map[string]string{"user": "alice", lTokenType: "input"}, counter, 100},
		{"air_user_cost_total", map[string]string{"user": "alice", "currency": "USD"}, counter, 1.2345},
	}
	for i, tc := range tests {
		got := tc.get(find(t, f, tc.name, tc.labels))
		if diff := got - tc.want; diff > 1e-9 || diff < -1e-9 {
			t.Errorf("Test %d: %s%v = %v, want %v", i, tc.name, tc.labels, got, tc.want)
		}
	}
	// Every exported family shows up, and Names lists exactly them.
	var names []string
	for n := range f {
		names = append(names, n)
	}
	slices.Sort(names)
	want := slices.Sorted(slices.Values(Names()))
	if !slices.Equal(names, want) {
		t.Fatalf("exported families\n%v\nNames()\n%v", names, want)
	}
	r.StreamClosed()
	if v := gauge(find(t, gather(t, reg), "air_open_streams", nil)); v != 0 {
		t.Fatalf("open streams after close = %v", v)
	}
}

func hsum(m *dto.Metric) float64    { return m.GetHistogram().GetSampleSum() }
func counter(m *dto.Metric) float64 { return m.GetCounter().GetValue() }
func gauge(m *dto.Metric) float64   { return m.GetGauge().GetValue() }

// TestCardinalityBounded feeds 10,000 random model names, as a client may
// send them, through the path a handler takes: the series count must not
// grow beyond what the first unknown name added.
func TestCardinalityBounded(t *testing.T) {
	m := New()
	reg := prometheus.NewPedanticRegistry()
	if err := m.Register(reg, false); err != nil {
		t.Fatal(err)
	}
	o := m.Bind(testConfig)
	serve := func(model string) {
		r := o.Route(model)
		if r == nil {
			o.Reject("chat", 404, ReasonInvalidRequest)
			return
		}
		r.Observe(&Request{Outcome: OutcomeOK, Status: 200, Duration: time.Millisecond, Tokens: Tokens{Input: 1, Output: 1}})
	}
	serve("gpt-x")
	serve("no-such-model")
	before := series(t, reg)
	for i := 0; i < 10000; i++ {
		serve(fmt.Sprintf("model-%x", rand.Uint64()))
	}
	if after := series(t, reg); after != before {
		t.Fatalf("series grew from %d to %d after 10,000 random model names", before, after)
	}
	f := gather(t, reg)
	if v := counter(find(t, f, "air_requests_total", map[string]string{"model": Unknown})); v != 10001 {
		t.Fatalf("unknown-model requests = %v, want 10001", v)
	}
}

// TestAttemptResultsResolved: every result an endpoint reports has its
// series resolved in advance (an unknown one would be dropped).
func TestAttemptResultsResolved(t *testing.T) {
	for _, r := range []string{routing.AttemptOK, routing.AttemptStatus4xx, routing.AttemptStatus429,
		routing.AttemptStatus5xx, routing.AttemptConnectError, routing.AttemptTimeout, routing.AttemptCanceled} {
		if !slices.Contains(attemptResults[:], r) {
			t.Errorf("chatproxy attempt result %q has no series", r)
		}
	}
}

// BenchmarkObserve is the cost of the metrics of one streamed request
// (open/close stream, attempt, request with tokens, TTFT and cost), on
// and off (a nil observer, as with `metrics off`).
func BenchmarkObserve(b *testing.B) {
	for _, on := range []bool{true, false} {
		b.Run(map[bool]string{true: "on", false: "off"}[on], func(b *testing.B) {
			var o *Observer
			if on {
				m := New()
				if err := m.Register(prometheus.NewRegistry(), false); err != nil {
					b.Fatal(err)
				}
				o = m.Bind(testConfig)
			}
			q := Request{Outcome: OutcomeOK, Status: 200, Duration: 2 * time.Second, FirstByte: 300 * time.Millisecond,
				Tokens: Tokens{Input: 1200, Output: 300, CacheRead: 1000, Reasoning: 20}, Currency: "USD", CostNanos: 123456}
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					r := o.Route("gpt-x")
					r.StreamOpened()
					o.Attempt("openai", ResultOK, false)
					r.Observe(&q)
					r.StreamClosed()
				}
			})
		})
	}
}

func TestEndpointLabelsAreBounded(t *testing.T) {
	for i, tc := range []struct{ in, endpoint, operation string }{
		{"chat", "chat_completions", "chat"},
		{"/v1/chat/completions", "chat_completions", "chat"},
		{"/v1/messages", "messages", "chat"},
		{"/v1/messages/count_tokens", "count_tokens", "count_tokens"},
		{"/v1/responses/resp_123/cancel", "responses", "chat"},
		{"embeddings", "embeddings", "embeddings"},
		{"/v1/images/generations", "images", "generate_content"},
		{"/v1/tasks/task_1", "tasks", "generate_content"},
		{"/v1/models/gpt-4o", "models", "list_models"},
		{"/v1/secret-path-of-a-scanner", "other", "other"},
		{"/etc/passwd", "other", "other"},
	} {
		if ep := Endpoint(tc.in); ep != tc.endpoint || Operation(ep) != tc.operation {
			t.Errorf("Test %d: %q: endpoint %q operation %q, want %q %q", i, tc.in, ep, Operation(ep), tc.endpoint, tc.operation)
		}
	}
}

// TestCountReads: a read is counted once in air_requests_total, under its
// model when known and unknown otherwise, and observes no duration.
func TestCountReads(t *testing.T) {
	m := New()
	reg := prometheus.NewPedanticRegistry()
	if err := m.Register(reg, false); err != nil {
		t.Fatal(err)
	}
	o := m.Bind(testConfig)
	o.Count(o.Route("img"), "/v1/tasks/task_1", OutcomeOK, 200)
	o.Count(nil, "/v1/models", OutcomeOK, 200)
	o.Count(o.Route("gpt-x"), "/v1/responses/resp_1", OutcomeUpstreamError, 404)
	o.Count(nil, "/v1/tasks/task_2", OutcomeRejected, 404)
	f := gather(t, reg)
	for _, want := range []map[string]string{
		{"operation": OperationGenerateContent, "endpoint": EndpointTasks, "model": "img", "provider": "openai", "outcome": OutcomeOK, "status": "200"},
		{"operation": OperationListModels, "endpoint": EndpointModels, "model": Unknown, "provider": Unknown, "outcome": OutcomeOK, "status": "200"},
		{"operation": OperationChat, "endpoint": EndpointResponses, "model": "gpt-x", "outcome": OutcomeUpstreamError, "status": "404"},
		{"operation": OperationGenerateContent, "endpoint": EndpointTasks, "model": Unknown, "outcome": OutcomeRejected, "status": "404"},
	} {
		if v := counter(find(t, f, "air_requests_total", want)); v != 1 {
			t.Errorf("air_requests_total%v = %v, want 1", want, v)
		}
	}
	if d := f["gen_ai_server_request_duration_seconds"]; d != nil {
		for _, s := range d.GetMetric() {
			if s.GetHistogram().GetSampleCount() != 0 {
				t.Errorf("a read observed a duration: %v", s)
			}
		}
	}
	var nilObserver *Observer
	nilObserver.Count(nil, "/v1/models", OutcomeOK, 200) // metrics off: no panic
}
