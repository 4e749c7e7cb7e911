package tasks

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/caddy-air/caddy-air/providers"
	"github.com/caddy-air/caddy-air/routing"
)

// countAttempts is an upstream.Observer that keeps the results.
type countAttempts struct {
	mu  sync.Mutex
	got []string
}

func (c *countAttempts) Attempt(provider, result string, retried bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := provider + ":" + result
	if retried {
		r += ":retried"
	}
	c.got = append(c.got, r)
}

// TestCreateRoutes checks that a create goes where routing sends it: past
// a failing deployment to the healthy one, or to the fallback model when
// the model's only deployment fails; the task and its charge name the
// deployment (and fallback model) that served, and the upstream gets that
// deployment's model name.
func TestCreateRoutes(t *testing.T) {
	for i, tc := range []struct {
		name           string
		deps           func(bad, up *providers.Provider) []*providers.Route
		wantDeployment string
		wantServed     string
		wantModel      string
		wantAttempts   []string
	}{
		{
			name: "second deployment",
			deps: func(bad, up *providers.Provider) []*providers.Route {
				return []*providers.Route{{Pattern: "img", Kind: providers.KindImage, Policy: providers.PolicyRoundRobin,
					Deployments: []*providers.Deployment{{Provider: bad, UpstreamModel: "img-bad"}, {Provider: up, UpstreamModel: "img-up"}}}}
			},
			wantDeployment: "up/img-up", wantModel: "img-up",
			wantAttempts: []string{"bad:status_5xx:retried", "up:ok"},
		},
		{
			name: "fallback model",
			deps: func(bad, up *providers.Provider) []*providers.Route {
				return []*providers.Route{
					{Pattern: "img", Kind: providers.KindImage, Provider: bad, Fallbacks: []string{"img-b"}},
					{Pattern: "img-b", Kind: providers.KindImage, Provider: up},
				}
			},
			// The model's budget (retries 1) is spent on its deployment
			// first, after a backoff.
			wantDeployment: "up", wantServed: "img-b", wantModel: "img-b",
			wantAttempts: []string{"bad:status_5xx:retried", "bad:status_5xx:retried", "up:ok"},
		},
	} {
		e := newEnv(t, providers.ProtocolOpenAI)
		var badHits atomic.Int32
		bad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			badHits.Add(1)
			writeJSON(w, 500, `{"error":{"message":"down","type":"server_error"}}`)
		}))
		t.Cleanup(bad.Close)
		e.mux.HandleFunc("POST /v1/images/generations", func(w http.ResponseWriter, r *http.Request) {
			writeJSON(w, 200, `{"created":1,"data":[{"b64_json":"`+pngB64+`"}]}`)
		})
		up := e.table.Provider("up")
		up.Retries = 1
		badP := &providers.Provider{Name: "bad", Protocol: providers.ProtocolOpenAI, BaseURLs: []string{bad.URL + "/v1"}, Retries: 1}
		var err error
		if e.table, err = providers.NewTable([]*providers.Provider{up, badP}, tc.deps(badP, up)); err != nil {
			t.Fatal(err)
		}
		obs := &countAttempts{}
		s := e.service(func(c *Config) { c.Attempts = obs })
		tk, aerr := s.Create(context.Background(), alice, []byte(`{"model":"img","prompt":"x"}`), testMediaBase)
		if aerr != nil || tk.Status != StatusSucceeded {
			t.Fatalf("Test %d (%s): %v %+v", i, tc.name, aerr, tk)
		}
		if tk.Provider != "up" || tk.Deployment != tc.wantDeployment || tk.ServedModel != tc.wantServed || tk.Model != "img" {
			t.Errorf("Test %d (%s): task served by %q/%q/%q for %q", i, tc.name, tk.Provider, tk.Deployment, tk.ServedModel, tk.Model)
		}
		if got := e.biller.charges(); len(got) != 1 || got[0].Deployment != tc.wantDeployment || got[0].ServedModel != tc.wantServed || got[0].Provider != "up" {
			t.Errorf("Test %d (%s): charges %+v, want one by %s", i, tc.name, got, tc.wantDeployment)
		}
		sent := e.requests("POST", "/v1/images/generations")
		if len(sent) != 1 || gjson.GetBytes(sent[0].body, "model").Str != tc.wantModel {
			t.Errorf("Test %d (%s): healthy upstream got %d requests, want 1 for model %s", i, tc.name, len(sent), tc.wantModel)
		}
		if int(badHits.Load()) != len(tc.wantAttempts)-1 {
			t.Errorf("Test %d (%s): failing upstream got %d requests, want %d", i, tc.name, badHits.Load(), len(tc.wantAttempts)-1)
		}
		obs.mu.Lock()
		if !slices.Equal(obs.got, tc.wantAttempts) {
			t.Errorf("Test %d (%s): attempts %v, want %v", i, tc.name, obs.got, tc.wantAttempts)
		}
		obs.mu.Unlock()
	}
}

// TestFailedCreateNamesItsDeployment: a create whose every submission
// attempt fails is failed, and the task names the provider and deployment
// of its last attempt (after a 500 on the first deployment, a 400 on the
// second), not the model's first deployment.
func TestFailedCreateNamesItsDeployment(t *testing.T) {
	e := newEnv(t, providers.ProtocolOpenAI)
	bad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 500, `{"error":{"message":"down","type":"server_error"}}`)
	}))
	t.Cleanup(bad.Close)
	e.mux.HandleFunc("POST /v1/images/generations", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 400, `{"error":{"message":"bad prompt","type":"invalid_request_error"}}`)
	})
	up := e.table.Provider("up")
	up.Retries = 1
	badP := &providers.Provider{Name: "bad", Protocol: providers.ProtocolOpenAI, BaseURLs: []string{bad.URL + "/v1"}, Retries: 1}
	var err error
	e.table, err = providers.NewTable([]*providers.Provider{up, badP}, []*providers.Route{{Pattern: "img", Kind: providers.KindImage,
		Policy: providers.PolicyRoundRobin, Deployments: []*providers.Deployment{{Provider: badP, UpstreamModel: "img-bad"}, {Provider: up, UpstreamModel: "img-up"}}}})
	if err != nil {
		t.Fatal(err)
	}
	tk, aerr := e.service(nil).Create(context.Background(), alice, []byte(`{"model":"img","prompt":"x"}`), testMediaBase)
	if aerr != nil || tk.Status != StatusFailed {
		t.Fatalf("create: %v %+v, want a failed task", aerr, tk)
	}
	if tk.Provider != "up" || tk.Deployment != "up/img-up" || tk.UpstreamModel != "img-up" {
		t.Errorf("failed task names %q/%q/%q, want up/up/img-up: its last attempt's (a 400 ends the attempts)", tk.Provider, tk.Deployment, tk.UpstreamModel)
	}
}

// TestCreateHonoursRetryAfter checks that a create answered 429 with
// Retry-After by the model's only upstream waits that long before its
// next attempt, and that a create meanwhile fails without reaching the
// upstream when the wait is beyond what a request waits.
func TestCreateHonoursRetryAfter(t *testing.T) {
	e := newEnv(t, providers.ProtocolOpenAI, &providers.Route{Pattern: "img", Kind: providers.KindImage})
	var calls atomic.Int32
	var retryAfter atomic.Value
	retryAfter.Store("1")
	e.mux.HandleFunc("POST /v1/images/generations", func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			w.Header().Set("Retry-After", retryAfter.Load().(string))
			writeJSON(w, 429, `{"error":{"message":"slow down","type":"requests","code":"rate_limit_exceeded"}}`)
			return
		}
		writeJSON(w, 200, `{"created":1,"data":[{"b64_json":"`+pngB64+`"}]}`)
	})
	e.table.Provider("up").Retries = 1
	var mu sync.Mutex
	now := time.Now()
	var slept []time.Duration
	router := routing.New(routing.Config{Table: e.table,
		Now: func() time.Time { mu.Lock(); defer mu.Unlock(); return now },
		Sleep: func(_ <-chan struct{}, d time.Duration) bool {
			mu.Lock()
			defer mu.Unlock()
			slept = append(slept, d)
			now = now.Add(d)
			return true
		}})
	s := e.service(func(c *Config) { c.Router = router })
	tk, aerr := s.Create(context.Background(), alice, []byte(`{"model":"img","prompt":"x"}`), testMediaBase)
	if aerr != nil || tk.Status != StatusSucceeded {
		t.Fatalf("create: %v %+v", aerr, tk)
	}
	mu.Lock()
	if calls.Load() != 2 || len(slept) != 1 || slept[0] != time.Second {
		t.Errorf("%d upstream calls after waits %v, want 2 after one wait of 1s", calls.Load(), slept)
	}
	mu.Unlock()

	// A Retry-After beyond the longest wait leaves the upstream cooling
	// down: the next create fails at once, naming the wait.
	calls.Store(0)
	retryAfter.Store("30")
	tk, _ = s.Create(context.Background(), alice, []byte(`{"model":"img","prompt":"x"}`), testMediaBase)
	if tk.Status != StatusFailed || tk.Error != "RateLimited: slow down" {
		t.Errorf("create after a long Retry-After: %q %q", tk.Status, tk.Error)
	}
	tk, _ = s.Create(context.Background(), alice, []byte(`{"model":"img","prompt":"x"}`), testMediaBase)
	if tk.Status != StatusFailed || calls.Load() != 1 ||
		tk.Error != "UpstreamError: no upstream provider of this model could take the task; retry after 30 s" {
		t.Errorf("create during the cooldown: %q %q, %d upstream calls, want 1", tk.Status, tk.Error, calls.Load())
	}
	if len(e.biller.charges()) != 1 {
		t.Errorf("charges %+v, want only the first task's", e.biller.charges())
	}
}

// TestCreateIgnoresTryTimeout: a task create is never abandoned for
// another attempt, whatever its provider's try timeout: the provider may
// have taken the job. A slow submission past the try timeout is waited
// for and serves the task; a hanging one ends at the provider's timeout
// and fails the task, without a retry on the healthy deployment.
func TestCreateIgnoresTryTimeout(t *testing.T) {
	for _, tc := range []struct {
		name         string
		handler      func(w http.ResponseWriter, r *http.Request)
		wantStatus   string
		wantAttempts []string
	}{
		{"slow answer", func(w http.ResponseWriter, r *http.Request) {
			time.Sleep(150 * time.Millisecond)
			writeJSON(w, 200, `{"created":1,"data":[{"b64_json":"`+pngB64+`"}]}`)
		}, StatusSucceeded, []string{"slow:ok"}},
		{"hang", func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }, StatusFailed, []string{"slow:timeout"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, providers.ProtocolOpenAI)
			var slowHits atomic.Int32
			slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				slowHits.Add(1)
				_, _ = io.Copy(io.Discard, r.Body) // so that a client leaving ends r's context
				tc.handler(w, r)
			}))
			t.Cleanup(slow.Close)
			e.mux.HandleFunc("POST /v1/images/generations", func(w http.ResponseWriter, r *http.Request) {
				writeJSON(w, 200, `{"created":1,"data":[{"b64_json":"`+pngB64+`"}]}`)
			})
			up := e.table.Provider("up")
			up.Timeout = time.Second
			slowP := &providers.Provider{Name: "slow", Protocol: providers.ProtocolOpenAI, BaseURLs: []string{slow.URL + "/v1"},
				Retries: 1, Timeout: time.Second}
			var err error
			e.table, err = providers.NewTable([]*providers.Provider{up, slowP}, []*providers.Route{{Pattern: "img", Kind: providers.KindImage,
				Policy: providers.PolicyRoundRobin, Deployments: []*providers.Deployment{{Provider: slowP}, {Provider: up}}}})
			if err != nil {
				t.Fatal(err)
			}
			router := routing.New(routing.Config{Table: e.table, Options: map[string]routing.Options{
				"slow": {TryTimeout: 20 * time.Millisecond}, "up": {TryTimeout: 20 * time.Millisecond}}})
			obs := &countAttempts{}
			s := e.service(func(c *Config) { c.Router, c.Attempts = router, obs })
			tk, aerr := s.Create(context.Background(), alice, []byte(`{"model":"img","prompt":"x"}`), testMediaBase)
			if aerr != nil || tk.Status != tc.wantStatus || tk.Deployment != "slow" {
				t.Fatalf("create: %v, task %q by %q (%s), want %q by slow", aerr, tk.Status, tk.Deployment, tk.Error, tc.wantStatus)
			}
			if tc.wantStatus == StatusFailed && !strings.HasPrefix(tk.Error, "UpstreamTimeout") {
				t.Errorf("task error %q, want UpstreamTimeout", tk.Error)
			}
			if n := len(e.requests("POST", "/v1/images/generations")); n != 0 || slowHits.Load() != 1 {
				t.Errorf("slow deployment got %d submissions, healthy one %d: want 1 and 0 (no retry)", slowHits.Load(), n)
			}
			obs.mu.Lock()
			defer obs.mu.Unlock()
			if !slices.Equal(obs.got, tc.wantAttempts) {
				t.Errorf("attempts %v, want %v", obs.got, tc.wantAttempts)
			}
		})
	}
}
