package tasks

import (
	"context"
	"encoding/base64"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/caddy-air/caddy-air/providers"
)

// TestCreateCap fills MaxConcurrentCreates with image creates that wait on
// their upstream and checks that the next create is refused with 503 before
// anything is stored or sent upstream, and that finished creates give their
// slot back, whether they succeeded or failed.
func TestCreateCap(t *testing.T) {
	e := newEnv(t, providers.ProtocolOpenAI,
		&providers.Route{Pattern: "gpt-image-1", Kind: providers.KindImage},
		&providers.Route{Pattern: "sora-2", Kind: providers.KindVideo})
	release := make(chan struct{})
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	t.Cleanup(free) // before the upstream closes, which waits for its handlers
	arrived := make(chan struct{}, 8)
	b64 := base64.StdEncoding.EncodeToString(pngBytes)
	e.mux.HandleFunc("POST /v1/images/generations", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if strings.Contains(string(body), `"hold`) {
			arrived <- struct{}{}
			<-release
		}
		if strings.Contains(string(body), "fail") {
			writeJSON(w, 500, `{"error":{"message":"boom"}}`)
			return
		}
		writeJSON(w, 200, `{"created":1,"data":[{"b64_json":"`+b64+`"}]}`)
	})
	s := e.service(func(c *Config) { c.MaxConcurrentCreates = 2 })
	ctx := context.Background()

	var wg sync.WaitGroup
	results := make([]*Task, 2)
	for i, prompt := range []string{"hold", "hold and fail"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], _ = s.Create(ctx, alice, []byte(`{"model":"gpt-image-1","prompt":"`+prompt+`"}`), testMediaBase)
		}()
	}
	<-arrived
	<-arrived
	for i, body := range []string{`{"model":"gpt-image-1","prompt":"third"}`, `{"model":"sora-2","prompt":"a video"}`} {
		tk, aerr := s.Create(ctx, bob, []byte(body), testMediaBase)
		if tk != nil || aerr == nil || aerr.Status != http.StatusServiceUnavailable || aerr.Code == nil || *aerr.Code != "server_overloaded" || aerr.RetryAfter <= 0 {
			t.Fatalf("Test %d: create beyond the cap = %+v, %+v; want 503 server_overloaded with Retry-After", i, tk, aerr)
		}
	}
	if n := e.count("POST", "/v1/images/generations") + e.count("POST", "/v1/videos"); n != 2 {
		t.Fatalf("the upstream got %d creates, want only the 2 within the cap", n)
	}
	if l, _ := s.List(ctx, bob, 10); len(l) != 0 {
		t.Fatalf("refused creates were stored: %+v", l)
	}
	free()
	wg.Wait()
	if results[0] == nil || results[0].Status != StatusSucceeded || results[1] == nil || results[1].Status != StatusFailed {
		t.Fatalf("creates within the cap: %+v, %+v", results[0], results[1])
	}
	for i := range 3 {
		if tk, aerr := s.Create(ctx, bob, []byte(`{"model":"gpt-image-1","prompt":"again"}`), testMediaBase); aerr != nil || tk.Status != StatusSucceeded {
			t.Fatalf("Test %d: create after the others ended: %+v, %v; their slots were not given back", i, tk, aerr)
		}
	}
}

// TestAnswerBounds checks that an upstream answer beyond its bound fails the
// task with a clear error instead of being read whole.
func TestAnswerBounds(t *testing.T) {
	huge := func(n int) string { return `{"id":"video_1","status":"queued","pad":"` + strings.Repeat("x", n) + `"}` }
	for i, tc := range []struct {
		model, path, body string
		status            int
		wantOK            bool
	}{
		{"sora-2", "POST /v1/videos", huge(maxJSONBody - 100), 200, true},
		{"sora-2", "POST /v1/videos", huge(maxJSONBody), 200, false},
		// An error is judged by its status, whatever its body.
		{"sora-2", "POST /v1/videos", huge(maxJSONBody), 503, true},
		// One image may take far more than a status, but not without end.
		{"gpt-image-1", "POST /v1/images/generations", `{"data":[{"b64_json":"` + base64.StdEncoding.EncodeToString(pngBytes) + strings.Repeat("A", 4<<20) + `"}]}`, 200, true},
		{"gpt-image-1", "POST /v1/images/generations", `{"data":[{"b64_json":"` + strings.Repeat("A", maxImageJSONB64+maxJSONBody) + `"}]}`, 200, false},
	} {
		e := newEnv(t, providers.ProtocolOpenAI,
			&providers.Route{Pattern: "gpt-image-1", Kind: providers.KindImage},
			&providers.Route{Pattern: "sora-2", Kind: providers.KindVideo})
		e.mux.HandleFunc(tc.path, func(w http.ResponseWriter, r *http.Request) {
			// Streamed, with no declared length: only the bound stops it.
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(tc.status)
			_, _ = io.Copy(w, strings.NewReader(tc.body))
		})
		s := e.service(nil)
		tk, aerr := s.Create(context.Background(), alice, []byte(`{"model":"`+tc.model+`","prompt":"x"}`), testMediaBase)
		if aerr != nil {
			t.Fatalf("Test %d: %v", i, aerr)
		}
		tooLarge := tk.Status == StatusFailed && strings.Contains(tk.Error, "exceeds the gateway's limit")
		if tc.wantOK == tooLarge || tc.status != 200 && tk.Error != "UpstreamError: the provider answered HTTP 503" {
			t.Errorf("Test %d: %s answer of %d bytes: status %q, error %q", i, tc.path, len(tc.body), tk.Status, tk.Error)
		}
	}
}
