package mockprovider

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tidwall/gjson"
)

// faultEndpoint is one endpoint of the mock and a valid request to it.
type faultEndpoint struct {
	name, method, path, body string
	anthropic                bool
}

// faultEndpoints are the endpoints faults apply to.
var faultEndpoints = []faultEndpoint{
	{"chat", http.MethodPost, "/chat/completions", `{"model":"m","messages":[{"role":"user","content":"hi"}]}`, false},
	{"messages", http.MethodPost, "/messages", `{"model":"m","max_tokens":8,"messages":[{"role":"user","content":"hi"}]}`, true},
	{"responses", http.MethodPost, "/responses", `{"model":"m","input":"hi"}`, false},
	{"embeddings", http.MethodPost, "/embeddings", `{"model":"e","input":"hi"}`, false},
	{"images", http.MethodPost, "/images/generations", `{"model":"dall-e-2","prompt":"x","size":"256x256"}`, false},
	{"videos", http.MethodPost, "/videos", `{"model":"sora-2","prompt":"x"}`, false},
	{"models", http.MethodGet, "/models", "", false},
}

// faultServer starts a mock with faults behind a handler that counts the
// requests it has finished serving, and returns its base URL, the mock
// and that count.
func faultServer(t *testing.T, c Config) (string, *Handler, func() int) {
	t.Helper()
	c.APIKey = testKey
	h := New(c)
	var mu sync.Mutex
	served := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			mu.Lock()
			served++
			mu.Unlock()
		}()
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(h.Close)
	return srv.URL + "/mock/v1", h, func() int { mu.Lock(); defer mu.Unlock(); return served }
}

// send makes the request of e on a fresh connection and returns the
// response (with its body read into body) or the transport's error.
func send(ctx context.Context, base string, e faultEndpoint) (resp *http.Response, body string, err error) {
	req, _ := http.NewRequestWithContext(ctx, e.method, base+e.path, strings.NewReader(e.body))
	req.Header.Set("Authorization", "Bearer "+testKey)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Anthropic-Version", anthropicVersion)
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err = client.Do(req)
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp, string(b), err
}

func TestFaultStatusShapes(t *testing.T) {
	for i, tc := range []struct {
		fault           Fault
		status          int
		retryAfter      string
		openAI, anthrop string // error.type in each shape
	}{
		{Fault{Rate: 1, Status: 429, RetryAfter: 2 * time.Second}, 429, "2", "requests", "rate_limit_error"},
		{Fault{Rate: 1, Status: 429}, 429, "1", "requests", "rate_limit_error"},
		{Fault{Rate: 1, Status: 503, RetryAfter: 1500 * time.Millisecond}, 503, "2", "server_error", "api_error"},
		{Fault{Rate: 1, Status: 500}, 500, "", "server_error", "api_error"},
		{Fault{Rate: 1, Status: 529}, 529, "", "server_error", "overloaded_error"},
	} {
		base, _, _ := faultServer(t, Config{Faults: []Fault{tc.fault}})
		for _, e := range faultEndpoints {
			resp, body, err := send(context.Background(), base, e)
			if err != nil {
				t.Fatalf("Test %d: %s: %v", i, e.name, err)
			}
			if resp.StatusCode != tc.status || resp.Header.Get("Retry-After") != tc.retryAfter {
				t.Errorf("Test %d: %s: status %d Retry-After %q, want %d %q", i, e.name, resp.StatusCode, resp.Header.Get("Retry-After"), tc.status, tc.retryAfter)
			}
			if e.anthropic {
				if gjson.Get(body, "type").Str != "error" || gjson.Get(body, "error.type").Str != tc.anthrop {
					t.Errorf("Test %d: %s: Anthropic error %s, want type %s", i, e.name, body, tc.anthrop)
				}
			} else if gjson.Get(body, "error.type").Str != tc.openAI || !gjson.Get(body, "error.message").Exists() {
				t.Errorf("Test %d: %s: OpenAI error %s, want type %s", i, e.name, body, tc.openAI)
			}
		}
	}
}

func TestFaultRateZeroAndUnauthorized(t *testing.T) {
	base, _, _ := faultServer(t, Config{Faults: []Fault{{Rate: 0, Status: 500}}})
	for range 20 {
		for _, e := range faultEndpoints {
			resp, body, err := send(context.Background(), base, e)
			if err != nil || resp.StatusCode != http.StatusOK {
				t.Fatalf("%s: rate 0 failed a request: %v %v %s", e.name, err, resp, body)
			}
		}
	}
	// A request without the key gets 401 before any fault is drawn.
	base, _, _ = faultServer(t, Config{Faults: []Fault{{Rate: 1, Status: 500}}})
	status, _, _ := post(t, base+"/chat/completions", faultEndpoints[0].body, "Authorization", "Bearer wrong")
	if status != http.StatusUnauthorized {
		t.Errorf("bad key: status %d, want 401", status)
	}
	// Image files are not API requests: a failing instance still serves them.
	if status, _, body := do(t, http.MethodGet, base+"/files/nope.png", "", ""); status == http.StatusInternalServerError {
		t.Errorf("file download got the fault: %s", body)
	}
}

func TestFaultTransportModes(t *testing.T) {
	chat := faultEndpoints[0]
	stream := chat
	stream.body = `{"model":"m","stream":true,"mock_chunks":8,"messages":[{"role":"user","content":"hi"}]}`
	msgStream := faultEndpoints[1]
	msgStream.body = `{"model":"m","max_tokens":64,"stream":true,"messages":[{"role":"user","content":"hi"}]}`
	for i, tc := range []struct {
		name  string
		fault Fault
		e     faultEndpoint
		check func(resp *http.Response, body string, err error) string
	}{
		{"reset", Fault{Rate: 1, Mode: FaultReset}, chat, func(_ *http.Response, _ string, err error) string {
			if !errors.Is(err, syscall.ECONNRESET) {
				return "want connection reset, got " + errString(err)
			}
			return ""
		}},
		{"reset messages", Fault{Rate: 1, Mode: FaultReset}, faultEndpoints[1], func(_ *http.Response, _ string, err error) string {
			if !errors.Is(err, syscall.ECONNRESET) {
				return "want connection reset, got " + errString(err)
			}
			return ""
		}},
		{"cut json", Fault{Rate: 1, Mode: FaultCut}, chat, func(resp *http.Response, body string, err error) string {
			if !errors.Is(err, io.ErrUnexpectedEOF) || resp.StatusCode != 200 {
				return "want 200 then unexpected EOF, got " + errString(err)
			}
			if int64(len(body)) != resp.ContentLength/2 || gjson.Valid(body) {
				return "want half of the body, got " + body
			}
			return ""
		}},
		{"cut chat stream", Fault{Rate: 1, Mode: FaultCut}, stream, func(resp *http.Response, body string, err error) string {
			if !errors.Is(err, io.ErrUnexpectedEOF) || resp.StatusCode != 200 {
				return "want 200 then unexpected EOF, got " + errString(err)
			}
			if n := strings.Count(body, "data: "); n != cutEvents || strings.Contains(body, "[DONE]") || !strings.Contains(body, `"content":"`) {
				return "want the role chunk and one content chunk, got " + body
			}
			return ""
		}},
		{"cut messages stream", Fault{Rate: 1, Mode: FaultCut}, msgStream, func(resp *http.Response, body string, err error) string {
			if !errors.Is(err, io.ErrUnexpectedEOF) || resp.StatusCode != 200 {
				return "want 200 then unexpected EOF, got " + errString(err)
			}
			if !strings.HasPrefix(body, "event: message_start") || strings.Count(body, "event: ") != cutEvents || strings.Contains(body, "message_stop") {
				return "want message_start and one more event, got " + body
			}
			return ""
		}},
		{"slow", Fault{Rate: 1, Mode: FaultSlow, Delay: 300 * time.Millisecond}, chat, func(resp *http.Response, body string, err error) string {
			if err != nil || resp.StatusCode != 200 || gjson.Get(body, "object").Str != "chat.completion" || resp.Header.Get("X-Mock-Fault") != "slow" {
				return "want a normal answer marked slow, got " + errString(err) + " " + body
			}
			return ""
		}},
		{"hang bounded", Fault{Rate: 1, Mode: FaultHang, Delay: 100 * time.Millisecond}, faultEndpoints[1], func(resp *http.Response, body string, err error) string {
			if err != nil || resp.StatusCode != http.StatusGatewayTimeout || gjson.Get(body, "error.type").Str != "timeout_error" {
				return "want Anthropic's 504 timeout_error after the bound, got " + errString(err) + " " + body
			}
			return ""
		}},
	} {
		base, _, _ := faultServer(t, Config{Faults: []Fault{tc.fault}})
		start := time.Now()
		resp, body, err := send(context.Background(), base, tc.e)
		if msg := tc.check(resp, body, err); msg != "" {
			t.Errorf("Test %d (%s): %s", i, tc.name, msg)
		}
		// The delay is a lower bound the mock guarantees, not a speed.
		if d := time.Since(start); d < tc.fault.Delay {
			t.Errorf("Test %d (%s): answered after %v, before the delay of %v", i, tc.name, d, tc.fault.Delay)
		}
	}
}

func errString(err error) string {
	if err == nil {
		return "no error"
	}
	return err.Error()
}

// waitServed waits until n requests have been served, failing after a
// generous bound: a handler that never returns is a leaked goroutine.
func waitServed(t *testing.T, served func() int, n int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); served() < n; {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d requests still held by the mock", n-served(), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestFaultHangEndsWithClient(t *testing.T) {
	for i, f := range []Fault{{Rate: 1, Mode: FaultHang}, {Rate: 1, Mode: FaultSlow, Delay: time.Hour}} {
		base, _, served := faultServer(t, Config{Faults: []Fault{f}})
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		_, _, err := send(ctx, base, faultEndpoints[0])
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Test %d: want the client's deadline, got %v", i, err)
		}
		waitServed(t, served, 1)
	}
}

func TestFaultHangEndsOnClose(t *testing.T) {
	base, h, served := faultServer(t, Config{Faults: []Fault{{Rate: 1, Mode: FaultHang}}})
	type result struct {
		resp *http.Response
		err  error
	}
	done := make(chan result, 1)
	go func() {
		resp, _, err := send(context.Background(), base, faultEndpoints[0])
		done <- result{resp, err}
	}()
	for h.faults.n.Load() == 0 { // the request has drawn its fault
		time.Sleep(5 * time.Millisecond)
	}
	h.Close()
	r := <-done
	if r.err != nil || r.resp.StatusCode != http.StatusGatewayTimeout {
		t.Fatalf("want 504 once the mock closes, got %v %v", r.resp, r.err)
	}
	waitServed(t, served, 1)
}

func TestFaultWindow(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	base, _, _ := faultServer(t, Config{Clock: clock, Faults: []Fault{{Rate: 1, Status: 500, For: time.Minute}}})
	for i, tc := range []struct {
		after  time.Duration
		status int
	}{{0, 500}, {59 * time.Second, 500}, {60 * time.Second, 200}, {time.Hour, 200}} {
		mu.Lock()
		now = time.Unix(1_700_000_000, 0).Add(tc.after)
		mu.Unlock()
		if status, _, body := post(t, base+"/chat/completions", faultEndpoints[0].body); status != tc.status {
			t.Errorf("Test %d: %v after start: status %d, want %d: %s", i, tc.after, status, tc.status, body)
		}
	}
}

func TestFaultDistribution(t *testing.T) {
	const n = 10000
	list := []Fault{{Rate: 0.2, Status: 429}, {Rate: 0.1, Status: 500}}
	draw := func(seed uint64) (seq []int, counts map[int]int) {
		fs := &faults{list: list, seed: seed}
		counts = map[int]int{}
		for range n {
			s := 200
			if f := fs.pick(time.Time{}); f != nil {
				s = f.Status
			}
			seq = append(seq, s)
			counts[s]++
		}
		return seq, counts
	}
	seq1, counts := draw(42)
	// Binomial standard deviations are 40 (20%) and 30 (10%): 5 of them.
	for status, want := range map[int]int{429: 2000, 500: 1000, 200: 7000} {
		if d := counts[status] - want; d < -230 || d > 230 {
			t.Errorf("status %d: %d of %d draws, want %d ± 230", status, counts[status], n, want)
		}
	}
	seq2, _ := draw(42)
	seq3, _ := draw(43)
	if !slices.Equal(seq1, seq2) {
		t.Error("the same seed drew different sequences")
	}
	if slices.Equal(seq1, seq3) {
		t.Error("two seeds drew the same sequence")
	}

	// Over HTTP, requests in sequence fail exactly as the seeded draws say.
	base, _, _ := faultServer(t, Config{FaultSeed: 42, Faults: list})
	for i := range 300 {
		status, _, body := post(t, base+"/chat/completions", faultEndpoints[0].body)
		if status != seq1[i] {
			t.Fatalf("request %d: status %d, want %d: %s", i, status, seq1[i], body)
		}
	}
}

func TestFaultValidate(t *testing.T) {
	for i, tc := range []struct {
		faults []Fault
		ok     bool
	}{
		{nil, true},
		{[]Fault{{Rate: 0.3, Status: 429}, {Rate: 0.7, Mode: FaultReset}}, true},
		{[]Fault{{Rate: 1.5, Status: 500}}, false},
		{[]Fault{{Rate: -0.1, Status: 500}}, false},
		{[]Fault{{Rate: 0.6, Status: 500}, {Rate: 0.5, Mode: FaultCut}}, false},
		{[]Fault{{Rate: 0.5, Status: 200}}, false},
		{[]Fault{{Rate: 0.5, Mode: FaultSlow, Delay: -time.Second}}, false},
		{[]Fault{{Rate: 0.5, Mode: FaultMode(9)}}, false},
	} {
		c := Config{Faults: tc.faults}
		if err := c.Validate(); (err == nil) != tc.ok {
			t.Errorf("Test %d: Validate() = %v, want ok %v", i, err, tc.ok)
		}
	}
	for i, tc := range []struct {
		in     string
		mode   FaultMode
		status int
		ok     bool
	}{
		{"429", FaultStatus, 429, true}, {"500", FaultStatus, 500, true}, {"hang", FaultHang, 0, true},
		{"slow", FaultSlow, 0, true}, {"reset", FaultReset, 0, true}, {"cut", FaultCut, 0, true},
		{"200", 0, 0, false}, {"600", 0, 0, false}, {"boom", 0, 0, false},
	} {
		mode, status, err := ParseFaultMode(tc.in)
		if (err == nil) != tc.ok || mode != tc.mode || status != tc.status {
			t.Errorf("Test %d: ParseFaultMode(%q) = %v, %d, %v", i, tc.in, mode, status, err)
		}
	}
}
