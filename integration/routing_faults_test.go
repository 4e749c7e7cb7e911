package integration

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"
)

// faultMock is a site block that mounts an air_mock instance at /name/,
// failing as its fault lines say: one more upstream on the gateway's own
// port.
func faultMock(name, fault string) string {
	return fmt.Sprintf(`handle_path /%s/* {
		air_mock {
			api_key mock-upstream-key
			%s
		}
	}
	`, name, fault)
}

// faultProvider is a provider block whose base URL is the air_mock
// instance at /mock/, with extra options.
func faultProvider(name, protocol, mock, extra string) string {
	return fmt.Sprintf(`provider %s {
			protocol %s
			base_url http://localhost:9080/%s/v1
			api_key mock-upstream-key
			%s
		}
		`, name, protocol, mock, extra)
}

// upstreamState is one entry of GET /air/providers.
type upstreamState struct {
	Provider, Deployment, Breaker, Reason string
	BaseURL                               string `json:"base_url"`
	Available                             bool
	Attempts, Failures                    int64
	Until                                 *time.Time
}

// upstreamOf returns the state of deployment's upstream in GET
// /air/providers.
func upstreamOf(t *testing.T, deployment string) upstreamState {
	t.Helper()
	var rep struct{ Upstreams []upstreamState }
	if status := adminJSON(t, http.MethodGet, "/air/providers", "", &rep); status != http.StatusOK {
		t.Fatalf("GET /air/providers: %d", status)
	}
	for _, u := range rep.Upstreams {
		if u.Deployment == deployment {
			return u
		}
	}
	t.Fatalf("GET /air/providers has no upstream of %s: %+v", deployment, rep.Upstreams)
	return upstreamState{}
}

// chatBody is a small chat request for model.
func chatBody(model string) string {
	return `{"model":"` + model + `","messages":[{"role":"user","content":"hi"}]}`
}

// TestRoutingMockFaults routes models over air_mock instances that fail
// in each of the mock's fault modes, through real Caddy and real HTTP.
// One of two deployments failing (500, 429 with Retry-After, a reset
// connection, a hang) costs clients nothing, or for a hang only the
// attempts before its breaker opens, and the traffic goes to the healthy
// deployment; both deployments failing, the fallback model answers; all
// failing, the client gets 503 upstream_unavailable with Retry-After, in
// OpenAI's shape on chat and Anthropic's on messages.
func TestRoutingMockFaults(t *testing.T) {
	breaker := "retries 1\n\t\t\tmin_requests 2\n\t\t\tfailure_rate 0.5\n\t\t\tfail_duration 1m"
	startGateway(t, gatewayOptions{
		Site: faultMock("m500", "fault 1 500") +
			faultMock("m429", "fault {\n\t\t\t\trate 1\n\t\t\t\tmode 429\n\t\t\t\tretry_after 30s\n\t\t\t}") +
			faultMock("mreset", "fault 1 reset") +
			faultMock("mhang", "fault 1 hang"),
		Providers: faultProvider("p500", "openai", "m500", breaker) +
			faultProvider("p429", "openai", "m429", "retries 1") +
			faultProvider("preset", "openai", "mreset", breaker) +
			faultProvider("phang", "openai", "mhang", breaker+"\n\t\t\ttimeout 1s") +
			faultProvider("pa-reset", "anthropic", "mreset", breaker),
		Models: `model fm-500 {
			lb_policy round_robin
			to p500 x500
			to mock ok500
		}
		model fm-429 {
			lb_policy round_robin
			to p429 x429
			to mock ok429
		}
		model fm-reset {
			lb_policy round_robin
			to preset xreset
			to mock okreset
		}
		model fm-hang {
			lb_policy round_robin
			to phang xhang
			to mock okhang
		}
		model fm-both {
			to p500 both-a
			to preset both-b
			fallback mock-gpt
		}
		model fm-down {
			to preset down-a
			to preset down-b
		}
		model fm-down-claude {
			to pa-reset down-c
		}`,
	})
	key, _ := createKey(t, "mock-faults")
	const n = 12

	// One of two deployments failing: every request is answered by the
	// healthy one, and the failing one stops getting attempts once its
	// breaker opened (after min_requests 2) or it went into cooldown.
	for _, tc := range []struct {
		model, failing, healthy string
		maxAttempts             float64 // on the failing deployment
		reason                  string  // why it is out of rotation afterwards
	}{
		{"fm-500", "p500/x500", "mock/ok500", 2, "breaker_open"},
		{"fm-429", "p429/x429", "mock/ok429", 1, "cooldown"},
		{"fm-reset", "preset/xreset", "mock/okreset", 2, "breaker_open"},
	} {
		t.Run(tc.model, func(t *testing.T) {
			provider := strings.Split(tc.failing, "/")[0]
			before := scrapeMetrics(t)
			for i := range n {
				if status, _, body := call(t, http.MethodPost, "/v1/chat/completions", key, chatBody(tc.model)); status != http.StatusOK {
					t.Fatalf("request %d with %s failing: %d %s, want 200 from %s", i, tc.failing, status, body, tc.healthy)
				}
			}
			got := scrapeMetrics(t).delta(before, "air_upstream_attempts_total", `provider="`+provider+`"`)
			if got < 1 || got > tc.maxAttempts {
				t.Errorf("%s got %v attempts in %d requests, want 1 to %v: then it should be out of rotation", tc.failing, got, n, tc.maxAttempts)
			}
			u := upstreamOf(t, tc.failing)
			if u.Available || u.Reason != tc.reason || u.Until == nil {
				t.Errorf("%s after its failures: %+v, want it unavailable for %s with an end", tc.failing, u, tc.reason)
			}
			if tc.reason == "cooldown" && time.Until(*u.Until) < 15*time.Second {
				t.Errorf("%s cools down until %s, want about the mock's Retry-After of 30s", tc.failing, u.Until)
			}
			answered := 0
			for _, rec := range ledgerOf(t, "mock-faults") {
				if rec.Model != tc.model {
					continue
				}
				if rec.Deployment != tc.healthy || rec.Status != http.StatusOK {
					t.Errorf("ledger record of %s: deployment %q status %d, want %s and 200", tc.model, rec.Deployment, rec.Status, tc.healthy)
				}
				answered++
			}
			if answered != n {
				t.Errorf("%d ledger records of %s, want %d", answered, tc.model, n)
			}
		})
	}

	// A hanging deployment: each attempt on it ends at the provider's
	// timeout with 504 (an attempt that timed out is not retried: the
	// provider may have done the work), until its breaker opens; then the
	// healthy deployment answers everything.
	t.Run("fm-hang", func(t *testing.T) {
		errors := 0
		for i := range n {
			status, _, body := call(t, http.MethodPost, "/v1/chat/completions", key, chatBody("fm-hang"))
			switch {
			case status == http.StatusGatewayTimeout && decodeError(t, body).code() == "upstream_timeout":
				errors++
				if i >= 2*2 {
					t.Fatalf("request %d timed out: the hanging deployment should be out of rotation by now", i)
				}
			case status != http.StatusOK:
				t.Fatalf("request %d: %d %s", i, status, body)
			}
		}
		if errors < 1 || errors > 2 {
			t.Errorf("%d requests timed out on the hanging deployment, want 1 to 2 (min_requests)", errors)
		}
		if u := upstreamOf(t, "phang/xhang"); u.Reason != "breaker_open" {
			t.Errorf("hanging upstream: %+v, want its breaker open", u)
		}
	})

	// Both deployments failing: the fallback model answers, and the ledger
	// says it served.
	t.Run("fallback", func(t *testing.T) {
		for i := range 5 {
			status, _, body := call(t, http.MethodPost, "/v1/chat/completions", key, chatBody("fm-both"))
			if status != http.StatusOK || gjson.GetBytes(body, "object").Str != "chat.completion" {
				t.Fatalf("request %d with both deployments failing: %d %s, want 200 from the fallback", i, status, body)
			}
		}
		served := 0
		for _, rec := range ledgerOf(t, "mock-faults") {
			if rec.Model == "fm-both" && rec.ServedModel == "mock-gpt" && rec.Deployment == "mock" && rec.Status == http.StatusOK {
				served++
			}
		}
		if served != 5 {
			t.Errorf("%d ledger records of fm-both served by the fallback mock-gpt on deployment mock, want 5", served)
		}
	})

	// Every deployment failing: 503 upstream_unavailable with Retry-After,
	// in each protocol's shape.
	t.Run("all down", func(t *testing.T) {
		for i := range 4 {
			status, h, body := call(t, http.MethodPost, "/v1/chat/completions", key, chatBody("fm-down"))
			if status != http.StatusServiceUnavailable || decodeError(t, body).code() != "upstream_unavailable" {
				t.Fatalf("chat %d, all down: %d %s, want 503 upstream_unavailable", i, status, body)
			}
			if ra, err := strconv.Atoi(h.Get("Retry-After")); err != nil || ra < 1 {
				t.Fatalf("chat %d, all down: Retry-After %q, want whole seconds ≥ 1", i, h.Get("Retry-After"))
			}
			status, h, body = call(t, http.MethodPost, "/v1/messages", key,
				`{"model":"fm-down-claude","max_tokens":8,"messages":[{"role":"user","content":"hi"}]}`, "anthropic-version", "2023-06-01")
			if status != http.StatusServiceUnavailable || gjson.GetBytes(body, "type").Str != "error" ||
				gjson.GetBytes(body, "error.type").Str != "overloaded_error" || gjson.GetBytes(body, "error.message").Str == "" {
				t.Fatalf("messages %d, all down: %d %s, want 503 overloaded_error in Anthropic's shape", i, status, body)
			}
			if ra, err := strconv.Atoi(h.Get("Retry-After")); err != nil || ra < 1 {
				t.Fatalf("messages %d, all down: Retry-After %q, want whole seconds ≥ 1", i, h.Get("Retry-After"))
			}
		}
		// Their breakers open, the answer names when one is due back.
		if u := upstreamOf(t, "preset/down-a"); u.Reason != "breaker_open" {
			t.Errorf("all down: %+v, want its breaker open", u)
		}
		_, h, _ := call(t, http.MethodPost, "/v1/chat/completions", key, chatBody("fm-down"))
		if ra, _ := strconv.Atoi(h.Get("Retry-After")); ra < 30 {
			t.Errorf("all down, breakers open for 1m: Retry-After %q, want the time until a probe may go", h.Get("Retry-After"))
		}
	})
}

// TestRoutingRecoversAfterProbe: a deployment whose air_mock fails every
// request for its first 10 s has its breaker opened, probed while it
// still fails (opening again), and once the fault has expired, a
// half-open probe closes the breaker and the deployment takes its share
// of the traffic again. No client sees an error meanwhile.
func TestRoutingRecoversAfterProbe(t *testing.T) {
	startGateway(t, gatewayOptions{
		Site:      faultMock("mrec", "fault {\n\t\t\t\trate 1\n\t\t\t\tmode 500\n\t\t\t\tfor 10s\n\t\t\t}"),
		Providers: faultProvider("prec", "openai", "mrec", "retries 1\n\t\t\tmin_requests 2\n\t\t\tfail_duration 1s"),
		Models: `model fm-rec {
			lb_policy round_robin
			to prec xrec
			to mock okrec
		}`,
	})
	key, _ := createKey(t, "recovery")
	ask := func(what string) {
		t.Helper()
		if status, _, body := call(t, http.MethodPost, "/v1/chat/completions", key, chatBody("fm-rec")); status != http.StatusOK {
			t.Fatalf("%s: %d %s, want 200", what, status, body)
		}
	}
	sawOpen := false
	eventually(t, 30*time.Second, "the failing deployment's breaker opens", func() bool {
		ask("while prec fails")
		u := upstreamOf(t, "prec/xrec")
		sawOpen = u.Breaker != "closed"
		return sawOpen
	})
	// Probes go each second once fail_duration passed; the first after
	// the fault's 10 s closes the breaker.
	eventually(t, 60*time.Second, "a probe closes the recovered deployment's breaker", func() bool {
		ask("while prec recovers")
		time.Sleep(100 * time.Millisecond)
		u := upstreamOf(t, "prec/xrec")
		return u.Breaker == "closed" && u.Available
	})
	for i := range 10 {
		ask(fmt.Sprintf("request %d after recovery", i))
	}
	fromRec := 0
	for _, rec := range ledgerOf(t, "recovery") {
		if rec.Deployment == "prec/xrec" {
			fromRec++
		}
	}
	if fromRec < 4 {
		t.Errorf("the recovered deployment answered %d requests, want about half of the 10 after its recovery (round robin)", fromRec)
	}
}

// TestRoutingAttemptLogsAndSpans: a request whose two attempts on its
// model's deployments fail and whose third is answered by the fallback
// model leaves exactly one log line ("upstream attempt", the handler's
// logger) and one span per attempt, each naming its deployment, number,
// status and request id, and never the upstream key; a request served by
// its first attempt logs it at debug level. Embeddings and count_tokens
// attempts have spans named after their endpoint.
func TestRoutingAttemptLogsAndSpans(t *testing.T) {
	logFile := filepath.Join(t.TempDir(), "attempts.log")
	rc := newOTLPReceiver(t)
	startTracedGateway(t, rc, gatewayOptions{
		Global: fmt.Sprintf(`log attempts {
		output file %s
		format json
		level DEBUG
		include http.handlers.air_chat http.handlers.air_embeddings http.handlers.air_count_tokens
	}`, logFile),
		Site:      faultMock("mlog", "fault 1 500"),
		Providers: faultProvider("plog", "openai", "mlog", "retries 1\n\t\t\tmin_requests 10"),
		Models: `model fm-log {
			to plog xlog-a
			to plog xlog-b
			fallback mock-gpt
		}`,
	})
	key, _ := createKey(t, "attempt-logs")
	if status, _, body := call(t, http.MethodPost, "/v1/chat/completions", key, chatBody("fm-log")); status != http.StatusOK {
		t.Fatalf("fm-log: %d %s, want 200 from the fallback", status, body)
	}
	if status, _, body := call(t, http.MethodPost, "/v1/chat/completions", key, chatBody("mock-gpt")); status != http.StatusOK {
		t.Fatalf("mock-gpt: %d %s", status, body)
	}
	recs := waitLedger(t, "attempt-logs", 2)
	ids := map[string]string{} // model → request id
	for _, r := range recs {
		ids[r.Model] = r.ID
	}

	// The log lines of each request, once all have been written.
	lines := func(id string) []map[string]any {
		data, err := os.ReadFile(logFile)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(data), "mock-upstream-key") {
			t.Error("an attempt log line holds the upstream key")
		}
		var out []map[string]any
		for _, l := range strings.Split(string(data), "\n") {
			var e map[string]any
			if json.Unmarshal([]byte(l), &e) == nil && e["msg"] == "upstream attempt" && e["request_id"] == id {
				out = append(out, e)
			}
		}
		return out
	}
	var got []map[string]any
	eventually(t, 10*time.Second, "three attempt lines of the fallback request", func() bool {
		got = lines(ids["fm-log"])
		return len(got) >= 3
	})
	time.Sleep(200 * time.Millisecond) // a fourth line would be a bug: give it time to show
	if got = lines(ids["fm-log"]); len(got) != 3 {
		t.Fatalf("%d attempt lines for the fallback request, want 3: %v", len(got), got)
	}
	for i, e := range got {
		wantStatus, wantLevel, wantFallback := 500.0, "info", false
		if i == 2 {
			wantStatus, wantFallback = 200, true
		}
		if e["attempt"] != float64(i+1) || e["status"] != wantStatus || e["level"] != wantLevel || e["fallback"] != wantFallback ||
			e["logger"] != "http.handlers.air_chat" || e["operation"] != "chat" || e["model"] != "fm-log" {
			t.Errorf("line %d: %v, want attempt %d, status %v, level %s, fallback %v", i, e, i+1, wantStatus, wantLevel, wantFallback)
		}
		if i < 2 && (!strings.HasPrefix(e["deployment"].(string), "plog/xlog-") || e["upstream"] != "http://localhost:9080/mlog/v1" || e["result"] != "status_5xx") {
			t.Errorf("line %d: %v, want a failed attempt on plog", i, e)
		}
	}
	if got[0]["deployment"] == got[1]["deployment"] {
		t.Errorf("both failed attempts on %v: the second should have gone to the other deployment", got[0]["deployment"])
	}
	if e := got[2]; e["deployment"] != "mock" || e["served_model"] != "mock-gpt" || e["result"] != "ok" {
		t.Errorf("fallback line: %v, want deployment mock serving mock-gpt", e)
	}
	eventually(t, 10*time.Second, "the attempt line of the plain request", func() bool { return len(lines(ids["mock-gpt"])) >= 1 })
	if l := lines(ids["mock-gpt"]); len(l) != 1 || l[0]["level"] != "debug" || l[0]["attempt"] != 1.0 {
		t.Errorf("plain request: %v, want one debug line for its one attempt", l)
	}

	// One span per attempt of the fallback request, with its request id.
	var spans []string
	eventually(t, 20*time.Second, "three attempt spans of the fallback request", func() bool {
		spans = spans[:0]
		for _, s := range rc.named("chat fm-log") {
			if attr(s, "air.request_id") == ids["fm-log"] {
				spans = append(spans, attr(s, "air.attempt")+":"+attr(s, "http.response.status_code"))
			}
		}
		return len(spans) >= 3
	})
	if strings.Join(spans, " ") != "1:500 2:500 3:200" {
		t.Errorf("attempt spans %v, want 1:500 2:500 3:200", spans)
	}

	// Embeddings and count_tokens spans are named after their endpoint.
	if status, _, body := call(t, http.MethodPost, "/v1/embeddings", key, `{"model":"mock-embed","input":"hi"}`); status != http.StatusOK {
		t.Fatalf("embeddings: %d %s", status, body)
	}
	if status, _, body := call(t, http.MethodPost, "/v1/messages/count_tokens", key,
		`{"model":"mock-claude","messages":[{"role":"user","content":"hi"}]}`, "anthropic-version", "2023-06-01"); status != http.StatusOK {
		t.Fatalf("count_tokens: %d %s", status, body)
	}
	for _, name := range []string{"embeddings mock-embed", "count_tokens mock-claude"} {
		s := rc.waitSpans(t, name, 1)[0]
		if op := attr(s, "gen_ai.operation.name"); op != strings.Fields(name)[0] {
			t.Errorf("span %q: gen_ai.operation.name %q", name, op)
		}
	}
	if n := len(rc.named("chat mock-embed")) + len(rc.named("messages mock-claude")); n != 0 {
		t.Errorf("%d embeddings or count_tokens spans named after chat or messages", n)
	}
}

// TestRoutingStateSurvivesReload: an upstream's open breaker stays open
// across a forced reload of the same config through the admin API's
// /load, and across a reload that changes something else; a reload that
// changes the upstream's base URL makes it a new upstream, closed.
func TestRoutingStateSurvivesReload(t *testing.T) {
	opts := gatewayOptions{
		Site:      faultMock("mkeep", "fault 1 500"),
		Providers: faultProvider("pkeep", "openai", "mkeep", "retries 1\n\t\t\tmin_requests 2\n\t\t\tfail_duration 10m"),
		Models: `model fm-keep {
			lb_policy round_robin
			to pkeep xkeep
			to mock okkeep
		}`,
	}
	g := startGateway(t, opts)
	key, _ := createKey(t, "reload-state")
	eventually(t, 30*time.Second, "the failing upstream's breaker opens", func() bool {
		if status, _, body := call(t, http.MethodPost, "/v1/chat/completions", key, chatBody("fm-keep")); status != http.StatusOK {
			t.Fatalf("fm-keep: %d %s", status, body)
		}
		return upstreamOf(t, "pkeep/xkeep").Reason == "breaker_open"
	})
	opened := upstreamOf(t, "pkeep/xkeep")

	stillOpen := func(after string) {
		t.Helper()
		u := upstreamOf(t, "pkeep/xkeep")
		if u.Breaker != "open" || u.Reason != "breaker_open" || u.Until == nil || !u.Until.Equal(*opened.Until) {
			t.Errorf("after %s: %+v, want the breaker open until %s as before", after, u, opened.Until)
		}
	}

	// The same config, loaded again: Caddy skips an unchanged config
	// unless told to reload with Cache-Control: must-revalidate.
	resp, err := http.Get("http://" + adminAddr + "/config/")
	if err != nil {
		t.Fatal(err)
	}
	cfg, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	req, _ := http.NewRequest(http.MethodPost, "http://"+adminAddr+"/load", bytes.NewReader(cfg))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Cache-Control", "must-revalidate")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST /load: %d %s", resp.StatusCode, body)
	}
	stillOpen("a forced reload of the same config")

	// Another model added: the upstream is unchanged.
	changed := opts
	changed.Models += "\n\t\tmodel fm-other mock"
	g.reload(changed)
	stillOpen("a reload that added a model")
	for i := range 6 {
		if status, _, body := call(t, http.MethodPost, "/v1/chat/completions", key, chatBody("fm-keep")); status != http.StatusOK {
			t.Fatalf("request %d after the reloads: %d %s", i, status, body)
		}
	}
	stillOpen("requests after the reloads")

	// Another base URL: a new upstream, its breaker closed.
	moved := changed
	moved.Providers = strings.Replace(moved.Providers, "http://localhost:9080/mkeep", "http://127.0.0.1:9080/mkeep", 1)
	g.reload(moved)
	if u := upstreamOf(t, "pkeep/xkeep"); u.Breaker != "closed" || !u.Available || u.Attempts != 0 {
		t.Errorf("after its base URL changed: %+v, want a fresh upstream", u)
	}
}
