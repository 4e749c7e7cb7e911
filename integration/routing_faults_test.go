package integration

import (
	"fmt"
	"net/http"
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
// connection, a hang under a try timeout) costs clients nothing, or for
// a hang without a try timeout only the attempts before its breaker
// opens, and the traffic goes to the healthy deployment; both deployments failing, the fallback model answers; all
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
			faultProvider("phang", "openai", "mhang", breaker+"\n\t\t\ttimeout 5s\n\t\t\ttry_timeout 300ms") +
			faultProvider("phang-untried", "openai", "mhang", breaker+"\n\t\t\ttimeout 1s") +
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
		model fm-hang-untried {
			lb_policy round_robin
			to phang-untried xhang
			to mock okhang-untried
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

	// A hanging deployment with a try timeout: each attempt on it is
	// abandoned after 300ms without headers, counted as a timeout, and
	// retried on the healthy deployment, until its breaker opens (after
	// min_requests 2); no client sees an error, and the ledger names the
	// healthy deployment for every request.
	t.Run("fm-hang", func(t *testing.T) {
		before := scrapeMetrics(t)
		for i := range n {
			if status, _, body := call(t, http.MethodPost, "/v1/chat/completions", key, chatBody("fm-hang")); status != http.StatusOK {
				t.Fatalf("request %d with phang/xhang hanging and try_timeout 300ms: %d %s, want 200 from mock/okhang", i, status, body)
			}
		}
		after := scrapeMetrics(t)
		if got := after.delta(before, "air_upstream_attempts_total", `provider="phang"`); got < 1 || got > 2 {
			t.Errorf("phang got %v attempts in %d requests, want 1 to 2: then its breaker should be open", got, n)
		}
		if got := after.delta(before, "air_upstream_attempts_total", `provider="phang"`, `result="timeout"`); got < 1 {
			t.Errorf("phang's abandoned attempts counted %v times as result timeout, want each of them", got)
		}
		if u := upstreamOf(t, "phang/xhang"); u.Reason != "breaker_open" || u.Failures < 1 {
			t.Errorf("hanging upstream: %+v, want its breaker open on its timeouts", u)
		}
		answered := 0
		for _, rec := range ledgerOf(t, "mock-faults") {
			if rec.Model != "fm-hang" {
				continue
			}
			if rec.Deployment != "mock/okhang" || rec.Status != http.StatusOK {
				t.Errorf("ledger record of fm-hang: deployment %q status %d, want mock/okhang and 200", rec.Deployment, rec.Status)
			}
			answered++
		}
		if answered != n {
			t.Errorf("%d ledger records of fm-hang, want %d", answered, n)
		}
	})

	// The same hanging deployment without a try timeout: each attempt on
	// it ends at the provider's timeout with 504 (an attempt that timed
	// out so is not retried), until its breaker opens; then the healthy
	// deployment answers everything.
	t.Run("fm-hang without try_timeout", func(t *testing.T) {
		errors := 0
		for i := range n {
			status, _, body := call(t, http.MethodPost, "/v1/chat/completions", key, chatBody("fm-hang-untried"))
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
		if u := upstreamOf(t, "phang-untried/xhang"); u.Reason != "breaker_open" {
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
