package integration

import (
	"net/http"
	"testing"
)

// TestMockFaultUpstreams runs two more air_mock instances beside the
// healthy one, on their own paths, each failing every request its own way,
// and checks that the gateway sees three different upstreams.
func TestMockFaultUpstreams(t *testing.T) {
	startGateway(t, gatewayOptions{
		Site: `handle_path /mock-429/* {
		air_mock {
			api_key mock-upstream-key
			fault {
				rate 1
				mode 429
				retry_after 7s
			}
		}
	}
	handle_path /mock-reset/* {
		air_mock {
			api_key mock-upstream-key
			fault 1 reset
		}
	}`,
		Providers: `provider mock-429 {
			protocol openai
			base_url http://localhost:9080/mock-429/v1
			api_key mock-upstream-key
		}
		provider mock-reset {
			protocol openai
			base_url http://localhost:9080/mock-reset/v1
			api_key mock-upstream-key
		}`,
		Models: `model limited-gpt mock-429
		model broken-gpt mock-reset`,
	})
	key, _ := createKey(t, "faults")
	body := func(model string) string {
		return `{"model":"` + model + `","messages":[{"role":"user","content":"hi"}]}`
	}
	for i, tc := range []struct {
		model  string
		status int
		code   string
	}{
		{"mock-gpt", http.StatusOK, ""},
		{"limited-gpt", http.StatusTooManyRequests, "rate_limit_exceeded"},
		{"broken-gpt", http.StatusServiceUnavailable, "upstream_unavailable"},
	} {
		status, _, b := call(t, http.MethodPost, "/v1/chat/completions", key, body(tc.model))
		if status != tc.status {
			t.Errorf("Test %d: %s: status %d, want %d: %s", i, tc.model, status, tc.status, b)
			continue
		}
		if tc.code != "" {
			if got := decodeError(t, b).code(); got != tc.code {
				t.Errorf("Test %d: %s: code %q, want %q: %s", i, tc.model, got, tc.code, b)
			}
		}
	}
	// The failing instance answers the mock's own callers the same way,
	// with its Retry-After.
	status, h, _ := callURL(t, http.MethodPost, "http://localhost:9080/mock-429/v1/chat/completions", "mock-upstream-key", body("m"))
	if status != http.StatusTooManyRequests || h.Get("Retry-After") != "7" {
		t.Errorf("mock-429 directly: status %d Retry-After %q, want 429 and 7", status, h.Get("Retry-After"))
	}
}
