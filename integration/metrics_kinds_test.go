package integration

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestMetricsCountEveryKindAndOutcome sends one request of each kind
// (every endpoint) and each way the gateway refuses one (no key, a wrong
// content type, a rate limit, a budget, an unknown model), and checks
// after each that air_requests_total grew by exactly one, in the series
// of its GenAI operation, endpoint, model, outcome and status, and that
// the other series it should move moved.
func TestMetricsCountEveryKindAndOutcome(t *testing.T) {
	opts := tasksOptions()
	opts.Prices = `{"currency":"USD","models":{"mock-gpt":{"tiers":[{"input":"1","output":"2"}]},"mock-image":{"image":"0.04"}}}`
	startGateway(t, opts)
	key, _ := createKey(t, "kinds-user")
	limited, limitedID := createKey(t, "kinds-user")
	if st := adminJSON(t, http.MethodPut, "/air/budgets/key/"+limitedID, `{"rpm":1}`, nil); st != http.StatusOK {
		t.Fatalf("rpm: %d", st)
	}
	if st, _, raw := postChat(t, limited, `{"model":"mock-gpt","messages":[{"role":"user","content":"x"}]}`); st != http.StatusOK {
		t.Fatalf("the rate-limited key's first request: %d %s", st, raw)
	}
	broke, brokeID := createKey(t, "kinds-user")
	if st := adminJSON(t, http.MethodPut, "/air/budgets/key/"+brokeID, `{"total":"0.000000001"}`, nil); st != http.StatusOK {
		t.Fatalf("budget: %d", st)
	}
	// Its first request spends more than the budget; the next is refused.
	if st, _, raw := postChat(t, broke, `{"model":"mock-gpt","messages":[{"role":"user","content":"x"}]}`); st != http.StatusOK {
		t.Fatalf("the broke key's first request: %d %s", st, raw)
	}
	chat := `{"model":"mock-gpt","messages":[{"role":"user","content":"x"}]}`
	type series struct {
		name   string
		labels []string
	}
	req := func(op, endpoint, model, outcome, status string) series {
		return series{"air_requests_total", []string{`operation="` + op + `"`, `endpoint="` + endpoint + `"`, `model="` + model + `"`,
			`outcome="` + outcome + `"`, `status="` + status + `"`}}
	}
	duration := func(op, model string) series {
		return series{"gen_ai_server_request_duration_seconds_count", []string{`gen_ai_operation_name="` + op + `"`, `gen_ai_request_model="` + model + `"`}}
	}
	rejection := func(reason string) series { return series{"air_rejections_total", []string{`reason="` + reason + `"`}} }
	for i, tc := range []struct {
		name         string
		method, path string
		key, body    string
		header       []string
		status       int
		moves        []series
	}{
		{"chat", "POST", "/v1/chat/completions", key, chat, nil, 200,
			[]series{req("chat", "chat_completions", "mock-gpt", "ok", "200"), duration("chat", "mock-gpt")}},
		{"messages", "POST", "/v1/messages", key, `{"model":"mock-claude","max_tokens":16,"messages":[{"role":"user","content":"x"}]}`, nil, 200,
			[]series{req("chat", "messages", "mock-claude", "ok", "200"), duration("chat", "mock-claude")}},
		{"responses", "POST", "/v1/responses", key, `{"model":"mock-gpt","input":"x"}`, nil, 200,
			[]series{req("chat", "responses", "mock-gpt", "ok", "200")}},
		{"embeddings", "POST", "/v1/embeddings", key, `{"model":"mock-embed","input":"x"}`, nil, 200,
			[]series{req("embeddings", "embeddings", "mock-embed", "ok", "200"), duration("embeddings", "mock-embed")}},
		{"count tokens", "POST", "/v1/messages/count_tokens", key, `{"model":"mock-claude","messages":[{"role":"user","content":"x"}]}`, nil, 200,
			[]series{req("count_tokens", "count_tokens", "mock-claude", "ok", "200")}},
		{"images", "POST", "/v1/images/generations", key, `{"model":"mock-image","prompt":"a fox","size":"256x256"}`, nil, 200,
			[]series{req("generate_content", "images", "mock-image", "ok", "200"), duration("generate_content", "mock-image")}},
		{"task", "POST", "/v1/tasks", key, `{"model":"mock-image","prompt":"a fox","size":"256x256"}`, nil, 202,
			[]series{req("generate_content", "tasks", "mock-image", "ok", "202")}},
		{"no key", "POST", "/v1/chat/completions", "", chat, nil, 401,
			[]series{req("chat", "chat_completions", "unknown", "rejected", "401"), rejection("auth")}},
		{"a wrong key on images", "POST", "/v1/images/generations", "sk-air-wrong", `{"model":"mock-image","prompt":"x"}`, nil, 401,
			[]series{req("generate_content", "images", "unknown", "rejected", "401"), rejection("auth")}},
		{"not JSON", "POST", "/v1/chat/completions", key, chat, []string{"Content-Type", "text/plain"}, 415,
			[]series{req("chat", "chat_completions", "unknown", "rejected", "415"), rejection("invalid_request")}},
		{"rate limit", "POST", "/v1/chat/completions", limited, chat, nil, 429,
			[]series{req("chat", "chat_completions", "mock-gpt", "rejected", "429"), rejection("rate_limit")}},
		{"budget", "POST", "/v1/chat/completions", broke, chat, nil, 429,
			[]series{req("chat", "chat_completions", "mock-gpt", "rejected", "429"), rejection("budget")}},
		{"unknown model", "POST", "/v1/chat/completions", key, `{"model":"no-such-model","messages":[{"role":"user","content":"x"}]}`, nil, 404,
			[]series{req("chat", "chat_completions", "unknown", "rejected", "404"), rejection("invalid_request")}},
		{"a bad image request", "POST", "/v1/images/generations", key, `{"model":"mock-image","prompt":"x","response_format":"gif"}`, nil, 400,
			[]series{req("generate_content", "images", "unknown", "rejected", "400"), rejection("invalid_request")}},
	} {
		before := scrapeMetrics(t)
		status, _, raw := call(t, tc.method, tc.path, tc.key, tc.body, tc.header...)
		if status != tc.status {
			t.Errorf("Test %d (%s): status %d, want %d: %s", i, tc.name, status, tc.status, raw)
			continue
		}
		var after scrape
		deadline := time.Now().Add(5 * time.Second)
		for {
			after = scrapeMetrics(t)
			if after.delta(before, "air_requests_total") >= 1 || time.Now().After(deadline) {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		if d := after.delta(before, "air_requests_total"); d != 1 {
			t.Errorf("Test %d (%s): air_requests_total grew by %v, want 1", i, tc.name, d)
		}
		for _, s := range tc.moves {
			if d := after.delta(before, s.name, s.labels...); d != 1 {
				t.Errorf("Test %d (%s): %s{%s} grew by %v, want 1", i, tc.name, s.name, strings.Join(s.labels, ","), d)
			}
		}
	}
}

// TestMetricsPerUserNoUpstream: with per_user, a request no upstream could
// take is counted under its user and key, not under an empty user.
func TestMetricsPerUserNoUpstream(t *testing.T) {
	opts := gatewayOptions{
		Extra:     "metrics {\n\t\t\tper_user\n\t\t}",
		Providers: "provider dead {\n\t\t\tprotocol openai\n\t\t\tbase_url http://127.0.0.1:1/v1\n\t\t\tapi_key k\n\t\t}",
		Models:    "model dead-model dead",
	}
	startGateway(t, opts)
	key, keyID := createKey(t, "stranded")
	before := scrapeMetrics(t)
	status, _, raw := postChat(t, key, `{"model":"dead-model","messages":[{"role":"user","content":"x"}]}`)
	if status < 500 {
		t.Fatalf("no upstream: %d %s", status, raw)
	}
	var after scrape
	eventually(t, 5*time.Second, "the request is counted", func() bool {
		after = scrapeMetrics(t)
		return after.delta(before, "air_user_requests_total") >= 1
	})
	if d := after.delta(before, "air_user_requests_total", `user="stranded"`, `key_id="`+keyID+`"`); d != 1 {
		t.Errorf("air_user_requests_total of the user grew by %v, want 1", d)
	}
	if d := after.delta(before, "air_user_requests_total"); d != 1 {
		t.Errorf("air_user_requests_total grew by %v in all, want 1 (none under an empty user)", d)
	}
}
