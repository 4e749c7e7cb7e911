package integration

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"sync/atomic"
	"testing"
	"time"
)

// switchUpstream is an OpenAI chat upstream that answers 200 naming the
// model it was sent, or 500 while failing is set.
type switchUpstream struct {
	*upstream
	failing atomic.Bool
}

func newSwitchUpstream(t *testing.T) *switchUpstream {
	s := &switchUpstream{}
	s.upstream = newUpstream(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
		if s.failing.Load() {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusInternalServerError)
			fmt.Fprint(w, `{"error":{"message":"boom","type":"server_error"}}`)
			return
		}
		var req struct {
			Model string `json:"model"`
		}
		_ = json.Unmarshal(body, &req)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"c1","object":"chat.completion","created":1,"model":%q,"choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}}`, req.Model)
	})
	return s
}

// TestRoutingSurvivesBadUpstreams: a model on two deployments with a
// fallback keeps answering while one deployment fails, falls back when
// both fail, passes the last 500 through when all fail and then, once
// every breaker is open, answers 503 upstream_unavailable with
// Retry-After, and sends traffic to a recovered deployment again after
// its breaker's half-open probe.
func TestRoutingSurvivesBadUpstreams(t *testing.T) {
	a, b, c := newSwitchUpstream(t), newSwitchUpstream(t), newSwitchUpstream(t)
	prov := func(name, url string) string {
		return fmt.Sprintf(`provider %s {
			protocol openai
			base_url %s/v1
			api_key k-%s
			retries 1
			fail_duration 3s
			min_requests 2
			failure_rate 0.5
		}
		`, name, url, name)
	}
	startGateway(t, gatewayOptions{
		Providers: prov("ra", a.URL) + prov("rb", b.URL) + prov("rc", c.URL),
		Models: `model routed-gpt {
			to ra up-a weight 1
			to rb up-b weight 1
			fallback routed-fb
		}
		model routed-fb rc up-c`,
	})
	key, _ := createKey(t, "router")
	ask := func() (int, http.Header, string) {
		t.Helper()
		status, h, body := call(t, "POST", "/v1/chat/completions", key, `{"model":"routed-gpt","messages":[{"role":"user","content":"x"}]}`)
		var out struct {
			Model string `json:"model"`
		}
		_ = json.Unmarshal(body, &out)
		if status != 200 {
			return status, h, string(body)
		}
		return status, h, out.Model
	}

	// One deployment failing: no client error, the other answers.
	b.failing.Store(true)
	for i := range 20 {
		if status, _, model := ask(); status != 200 || model != "up-a" {
			t.Fatalf("request %d with rb failing: %d %s, want 200 from up-a", i, status, model)
		}
	}
	bHits := b.hits.Load()
	if bHits > 4 {
		t.Errorf("rb got %d attempts while failing: its breaker should have opened after 2", bHits)
	}

	// Both failing: the fallback model answers, sent its own model name.
	a.failing.Store(true)
	for i := range 5 {
		if status, _, model := ask(); status != 200 || model != "up-c" {
			t.Fatalf("request %d with ra and rb failing: %d %s, want 200 from the fallback up-c", i, status, model)
		}
	}

	// The ledger names the deployment that answered each request, and the
	// fallback model that served the last five.
	var fromA, fromC int
	for _, rec := range ledgerOf(t, "router") {
		switch {
		case rec.Deployment == "ra/up-a" && rec.ServedModel == "" && rec.Model == "routed-gpt":
			fromA++
		case rec.Deployment == "rc/up-c" && rec.ServedModel == "routed-fb" && rec.Model == "routed-gpt":
			fromC++
		}
	}
	if fromA != 20 || fromC != 5 {
		t.Errorf("ledger: %d records answered by ra/up-a and %d by the fallback rc/up-c, want 20 and 5", fromA, fromC)
	}

	// All failing: the last attempt's 500 is passed through while an
	// upstream still answers; once every breaker is open, nothing is
	// tried and the client gets 503 upstream_unavailable with Retry-After.
	c.failing.Store(true)
	var status int
	var h http.Header
	var body string
	for i := range 20 {
		status, h, body = ask()
		if status == http.StatusServiceUnavailable {
			break
		}
		if status != http.StatusInternalServerError || decodeError(t, []byte(body)).Error.Message != "boom" {
			t.Fatalf("all failing, request %d: %d %s, want the upstream's 500 passed through or 503", i, status, body)
		}
	}
	if status != http.StatusServiceUnavailable || decodeError(t, []byte(body)).code() != "upstream_unavailable" {
		t.Fatalf("all failing, breakers open: %d %s, want 503 upstream_unavailable", status, body)
	}
	if ra, err := strconv.Atoi(h.Get("Retry-After")); err != nil || ra < 1 {
		t.Fatalf("all failing: Retry-After %q", h.Get("Retry-After"))
	}

	// Recovery: once fail_duration has passed, a probe closes rb's
	// breaker and rb takes traffic again.
	a.failing.Store(false)
	b.failing.Store(false)
	c.failing.Store(false)
	time.Sleep(3100 * time.Millisecond)
	before := b.hits.Load()
	for i := range 40 {
		if status, _, model := ask(); status != 200 || (model != "up-a" && model != "up-b") {
			t.Fatalf("request %d after recovery: %d %s", i, status, model)
		}
	}
	if got := b.hits.Load() - before; got < 8 {
		t.Errorf("the recovered deployment rb took %d of 40 requests, want about half", got)
	}
}
