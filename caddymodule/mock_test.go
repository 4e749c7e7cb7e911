package caddymodule

import (
	"context"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

func TestMockFaultCaddyfile(t *testing.T) {
	for i, tc := range []struct {
		input  string
		faults []MockFault
		seed   uint64
		err    string
	}{
		{input: "air_mock {\n api_key k\n}"},
		{input: `air_mock {
			fault_seed 42
			fault {
				rate 0.3
				mode 429
				retry_after 2s
				for 60s
			}
			fault 0.1 reset
			fault 0.05 slow {
				delay 3s
			}
		}`, seed: 42, faults: []MockFault{
			{Rate: 0.3, Mode: "429", RetryAfter: caddy.Duration(2 * time.Second), For: caddy.Duration(time.Minute)},
			{Rate: 0.1, Mode: "reset"},
			{Rate: 0.05, Mode: "slow", Delay: caddy.Duration(3 * time.Second)},
		}},
		{input: "air_mock {\n fault {\n rate 1\n mode hang\n delay 30s\n }\n}", faults: []MockFault{{Rate: 1, Mode: "hang", Delay: caddy.Duration(30 * time.Second)}}},
		{input: "air_mock {\n fault 1 cut\n}", faults: []MockFault{{Rate: 1, Mode: "cut"}}},
		{input: "air_mock {\n fault {\n rate 0.3\n }\n}", err: "mode is required"},
		{input: "air_mock {\n fault 0.3 teapot\n}", err: `fault mode "teapot"`},
		{input: "air_mock {\n fault 0.3 200\n}", err: `fault mode "200"`},
		{input: "air_mock {\n fault 1.3 500\n}", err: "from 0 to 1"},
		{input: "air_mock {\n fault 0.3\n}", err: "wrong argument count"},
		{input: "air_mock {\n fault {\n rate 0.3\n mode 500\n jitter 1s\n }\n}", err: `unrecognized fault option "jitter"`},
		{input: "air_mock {\n fault {\n rate 0.3\n mode slow\n delay soon\n }\n}", err: "bad duration"},
		{input: "air_mock {\n fault_seed -1\n}", err: "fault_seed"},
	} {
		var m Mock
		err := m.UnmarshalCaddyfile(caddyfile.NewTestDispenser(tc.input))
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("Test %d: error %v, want one containing %q", i, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("Test %d: %v", i, err)
			continue
		}
		if !reflect.DeepEqual(m.Faults, tc.faults) || m.FaultSeed != tc.seed {
			t.Errorf("Test %d: faults %+v seed %d, want %+v seed %d", i, m.Faults, m.FaultSeed, tc.faults, tc.seed)
		}
	}
}

// provisionMock parses an air_mock block and provisions it.
func provisionMock(t *testing.T, input string) (*Mock, error) {
	t.Helper()
	var m Mock
	if err := m.UnmarshalCaddyfile(caddyfile.NewTestDispenser(input)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
	t.Cleanup(cancel)
	return &m, m.Provision(ctx)
}

// serveMock starts an HTTP server answering with m.
func serveMock(t *testing.T, m *Mock) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = m.ServeHTTP(w, r, nil)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/v1"
}

func TestMockFaultsTwoInstances(t *testing.T) {
	healthy, err := provisionMock(t, "air_mock {\n api_key k\n}")
	if err != nil {
		t.Fatal(err)
	}
	failing, err := provisionMock(t, `air_mock {
		api_key k
		fault {
			rate 1
			mode 429
			retry_after 3s
		}
	}`)
	if err != nil {
		t.Fatal(err)
	}
	chat := `{"model":"m","messages":[{"role":"user","content":"hi"}]}`
	for i, tc := range []struct {
		base       string
		status     int
		retryAfter string
	}{
		{serveMock(t, healthy), http.StatusOK, ""},
		{serveMock(t, failing), http.StatusTooManyRequests, "3"},
	} {
		req, _ := http.NewRequest(http.MethodPost, tc.base+"/chat/completions", strings.NewReader(chat))
		req.Header.Set("Authorization", "Bearer k")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.status || resp.Header.Get("Retry-After") != tc.retryAfter {
			t.Errorf("Test %d: status %d Retry-After %q, want %d %q", i, resp.StatusCode, resp.Header.Get("Retry-After"), tc.status, tc.retryAfter)
		}
	}
}

func TestMockFaultsProvisionErrors(t *testing.T) {
	// Each fault parses alone; together their rates exceed 1.
	if _, err := provisionMock(t, `air_mock {
		fault 0.7 500
		fault 0.5 reset
	}`); err == nil || !strings.Contains(err.Error(), "add up to") {
		t.Errorf("rates over 1: error %v", err)
	}
}

func TestMockCleanupEndsHangs(t *testing.T) {
	m, err := provisionMock(t, "air_mock {\n fault 1 hang\n}")
	if err != nil {
		t.Fatal(err)
	}
	base := serveMock(t, m)
	done := make(chan int, 1)
	go func() {
		resp, err := http.Post(base+"/chat/completions", "application/json", strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`))
		if err != nil {
			done <- 0
			return
		}
		resp.Body.Close()
		done <- resp.StatusCode
	}()
	time.Sleep(50 * time.Millisecond) // let the request reach the hang
	if err := m.Cleanup(); err != nil {
		t.Fatal(err)
	}
	if status := <-done; status != http.StatusGatewayTimeout {
		t.Errorf("status %d after Cleanup, want 504", status)
	}
}
