package integration

import (
	"bytes"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/shopspring/decimal"
)

// TestProvidersAdmin: an image model on two deployments, one of them an
// air_mock whose every answer is a 500. Image generations (task creates)
// keep succeeding, each billed once at the healthy deployment's price, the
// failing upstream's breaker opens, and GET /air/providers shows it open,
// without any key.
func TestProvidersAdmin(t *testing.T) {
	startGateway(t, gatewayOptions{
		Site: `handle_path /mock-down/* {
		air_mock {
			api_key mock-upstream-key
			fault 1 500
		}
	}`,
		Providers: `provider img-down {
			protocol openai
			base_url http://localhost:9080/mock-down/v1
			api_key mock-upstream-key
			retries 1
			min_requests 2
			failure_rate 0.5
			fail_duration 1m
		}
		provider img-up {
			protocol openai
			base_url http://localhost:9080/mock/v1
			api_key mock-upstream-key
			retries 1
		}`,
		Prices: `{"currency": "USD", "models": {
			"routed-image": {"image": "1.00"},
			"img-up/mock-image": {"image": "0.25"},
			"img-down/mock-image": {"image": "9.00"}}}`,
		Models: `model routed-image {
			kind image
			lb_policy round_robin
			to img-down mock-image
			to img-up mock-image
		}`,
	})
	key, _ := createKey(t, "providers-admin")
	const n = 6
	for i := range n {
		status, _, body := call(t, http.MethodPost, "/v1/images/generations", key, `{"model":"routed-image","prompt":"x","size":"256x256"}`)
		if status != http.StatusOK {
			t.Fatalf("image %d: %d %s, want 200 from the healthy deployment", i, status, body)
		}
	}

	var rep struct {
		Upstreams []struct {
			Provider, Deployment, Breaker, Reason string
			BaseURL                               string `json:"base_url"`
			Available                             bool
			Attempts, Failures                    int64
			Until                                 *string
		}
	}
	if status := adminJSON(t, http.MethodGet, "/air/providers", "", &rep); status != http.StatusOK {
		t.Fatalf("GET /air/providers: %d", status)
	}
	states := map[string]string{}
	for _, u := range rep.Upstreams {
		states[u.Deployment] = u.Breaker
		if u.Deployment == "img-down/mock-image" {
			if u.Available || u.Reason != "breaker_open" || u.Until == nil || u.Failures < 2 ||
				u.BaseURL != "http://localhost:9080/mock-down/v1" {
				t.Errorf("failing upstream: %+v, want its breaker open after its failures", u)
			}
		}
	}
	if states["img-down/mock-image"] != "open" || states["img-up/mock-image"] != "closed" {
		t.Errorf("breakers %v, want img-down open and img-up closed", states)
	}

	// The raw answer and the CLI's table never show a key.
	_, _, raw := callURL(t, http.MethodGet, "http://"+adminAddr+"/air/providers", "", "")
	if bytes.Contains(raw, []byte("mock-upstream-key")) {
		t.Errorf("/air/providers shows a key: %s", raw)
	}
	if table := caddyCLI(t, "air", "providers", "--address", adminAddr); !strings.Contains(table, "img-down/mock-image") || !strings.Contains(table, "breaker_open") ||
		strings.Contains(table, "mock-upstream-key") {
		t.Errorf("caddy air providers printed:\n%s", table)
	}

	// Every image was billed once, at the price of the deployment that
	// made it.
	var recs []struct {
		Model, Provider, Cost string
	}
	if status := adminJSON(t, http.MethodGet, "/air/ledger?flush=1&user="+url.QueryEscape("providers-admin"), "", &recs); status != http.StatusOK {
		t.Fatalf("reading the ledger: %d", status)
	}
	if len(recs) != n {
		t.Fatalf("%d ledger records, want %d", len(recs), n)
	}
	for i, r := range recs {
		if r.Model != "routed-image" || r.Provider != "img-up" || !decimal.RequireFromString(r.Cost).Equal(decimal.RequireFromString("0.25")) {
			t.Errorf("record %d: %s", i, fmt.Sprintf("%+v", r))
		}
	}
}
