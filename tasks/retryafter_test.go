package tasks

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/caddy-air/caddy-air/providers"
)

// TestPollRetryAfterCapped checks that a provider's Retry-After, however
// far off, delays a task's next poll by at most MaxBackoff: the task still
// finishes, or fails at MaxRunning, instead of staying running for years.
func TestPollRetryAfterCapped(t *testing.T) {
	for _, c := range []struct {
		name       string
		retryAfter string
		always     bool // every poll is refused, not just the first
		wantStatus string
		wantError  string
	}{
		{"31 years", "999999999", false, StatusSucceeded, ""},
		{"past a Duration", "99999999999999", false, StatusSucceeded, ""},
		{"a far date", "Fri, 31 Dec 9999 23:59:59 GMT", false, StatusSucceeded, ""},
		{"an hour", "3600", false, StatusSucceeded, ""},
		{"never finishes", "999999999", true, StatusFailed, "UpstreamTimeout: the provider did not finish within 1s"},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, providers.ProtocolOpenAI, &providers.Route{Pattern: "sora-2", Kind: providers.KindVideo})
			e.mux.HandleFunc("POST /v1/videos", func(w http.ResponseWriter, r *http.Request) {
				writeJSON(w, 200, `{"id":"video_123","object":"video","status":"queued","progress":0}`)
			})
			e.mux.HandleFunc("GET /v1/videos/video_123/content", func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "video/mp4")
				_, _ = w.Write(mp4Bytes)
			})
			var polls atomic.Int32
			e.mux.HandleFunc("GET /v1/videos/video_123", func(w http.ResponseWriter, r *http.Request) {
				if polls.Add(1) == 1 || c.always {
					w.Header().Set("Retry-After", c.retryAfter)
					writeJSON(w, http.StatusTooManyRequests, `{"error":{"message":"slow down","type":"rate_limit_exceeded"}}`)
					return
				}
				writeJSON(w, 200, `{"id":"video_123","object":"video","status":"completed","progress":100,"seconds":"4"}`)
			})
			s := e.service(func(c *Config) { c.MaxRunning = time.Second })
			e.run(s)
			tk, aerr := s.Create(context.Background(), alice, []byte(`{"model":"sora-2","prompt":"x","seconds":4}`), testMediaBase)
			if aerr != nil {
				t.Fatal(aerr)
			}
			got := waitStatus(t, s, alice, tk.ID, c.wantStatus)
			if got.Error != c.wantError {
				t.Errorf("error %q, want %q", got.Error, c.wantError)
			}
			if n := polls.Load(); n < 2 {
				t.Errorf("polled %d times, want the task polled again after the Retry-After", n)
			}
		})
	}
}

func TestBackoffBounds(t *testing.T) {
	s := &Service{pollInterval: 5 * time.Second, maxBackoff: 2 * time.Minute}
	for _, c := range []struct {
		failures   int
		retryAfter time.Duration
		want       time.Duration
	}{
		{1, 0, 5 * time.Second},
		{3, 0, 20 * time.Second},
		{100, 0, 2 * time.Minute},
		{1, 30 * time.Second, 30 * time.Second},
		{1, time.Hour, 2 * time.Minute},
		{1, 1<<63 - 1, 2 * time.Minute},
	} {
		if got := s.backoff(c.failures, c.retryAfter); got != c.want {
			t.Errorf("backoff(%d, %s) = %s, want %s", c.failures, c.retryAfter, got, c.want)
		}
	}
}
