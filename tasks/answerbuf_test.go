package tasks

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/caddy-air/caddy-air/providers"
)

// testBuffers is a Buffers that records its peak.
type testBuffers struct {
	mu                sync.Mutex
	limit, used, peak int64
}

func (b *testBuffers) Take(n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.used+n > b.limit {
		return false
	}
	b.used += n
	b.peak = max(b.peak, b.used)
	return true
}

func (b *testBuffers) Give(n int64) {
	b.mu.Lock()
	b.used -= n
	b.mu.Unlock()
}

func (b *testBuffers) state() (used, peak int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used, b.peak
}

// hideLength hides the length of a reader from readAnswer's callers.
type hideLength struct{ io.Reader }

func TestReadAnswer(t *testing.T) {
	body := bytes.Repeat([]byte("0123456789abcdef"), 20000) // 320,000 bytes
	for _, c := range []struct {
		name      string
		declared  int64
		limit     int64
		budget    int64
		wantLen   int
		wantErr   error
		wantCharg int64 // what the charge holds after the read
	}{
		{"declared", int64(len(body)), 1 << 20, 1 << 20, len(body), nil, int64(len(body)) + 1},
		{"unknown length", -1, 1 << 20, 1 << 20, len(body), nil, 512 << 10},
		{"too long", -1, 100000, 1 << 20, 100001, nil, 100001},
		{"budget spent at once", int64(len(body)), 1 << 20, 1000, 0, errBuffersSpent, 0},
		{"budget spent growing", -1, 1 << 20, 200 << 10, 0, errBuffersSpent, 128 << 10},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := &testBuffers{limit: c.budget}
			ch := &charge{b: b}
			data, err := readAnswer(hideLength{bytes.NewReader(body)}, c.declared, c.limit, ch)
			if !errors.Is(err, c.wantErr) || len(data) != c.wantLen {
				t.Fatalf("read %d bytes, %v; want %d, %v", len(data), err, c.wantLen, c.wantErr)
			}
			if err == nil && !bytes.Equal(data, body[:c.wantLen]) {
				t.Error("read bytes differ from the answer")
			}
			if used, peak := b.state(); used != c.wantCharg || ch.n != used || peak > c.budget {
				t.Errorf("charged %d (charge says %d, peak %d), want %d within %d", used, ch.n, peak, c.wantCharg, c.budget)
			}
			ch.release()
			ch.release()
			if used, _ := b.state(); used != 0 {
				t.Errorf("%d bytes still charged after release", used)
			}
		})
	}
}

// TestImageAnswersBudget checks that the OpenAI Images answers held at
// once stay within the Buffers: an answer that does not fit fails its task,
// unbilled, and every charge is given back.
func TestImageAnswersBudget(t *testing.T) {
	// A PNG's header and random bytes: the gateway stores only files
	// whose bytes are an image.
	img := make([]byte, 768<<10)
	_, _ = rand.Read(img)
	copy(img, pngBytes)
	b64 := base64.StdEncoding.EncodeToString(img) // 1 MiB
	answer := `{"created":1,"data":[` + strings.Repeat(`{"b64_json":"`+b64+`"},`, 3) + `{"b64_json":"` + b64 + `"}]}`
	for _, c := range []struct {
		name       string
		budget     int64
		creates    int
		wantStatus string
	}{
		{"fits", 64 << 20, 1, StatusSucceeded},
		{"answer over the budget", 3 << 20, 1, StatusFailed},
		{"decoded images over the budget", 6 << 20, 1, StatusFailed},
		{"many at once", 16 << 20, 8, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, providers.ProtocolOpenAI, &providers.Route{Pattern: "gpt-image-1", Kind: providers.KindImage})
			e.mux.HandleFunc("POST /v1/images/generations", func(w http.ResponseWriter, r *http.Request) {
				writeJSON(w, 200, answer)
			})
			b := &testBuffers{limit: c.budget}
			s := e.service(func(c *Config) { c.Buffers = b })
			var wg sync.WaitGroup
			tasks := make([]*Task, c.creates)
			for i := range tasks {
				wg.Go(func() {
					tk, aerr := s.Create(context.Background(), alice, []byte(`{"model":"gpt-image-1","prompt":"cats","n":4}`), testMediaBase)
					if aerr != nil {
						t.Errorf("create: %v", aerr)
						return
					}
					tasks[i] = tk
				})
			}
			wg.Wait()
			used, peak := b.state()
			if used != 0 {
				t.Errorf("%d bytes still charged after the creates", used)
			}
			if peak > c.budget {
				t.Errorf("peak charge %d, over the budget (%d)", peak, c.budget)
			}
			succeeded := 0
			for _, tk := range tasks {
				if tk == nil {
					continue
				}
				if c.wantStatus != "" && tk.Status != c.wantStatus {
					t.Errorf("task %s, error %q; want %s", tk.Status, tk.Error, c.wantStatus)
				}
				switch tk.Status {
				case StatusSucceeded:
					succeeded++
				case StatusFailed:
					if !strings.Contains(tk.Error, "max_buffered_bodies") {
						t.Errorf("error %q, want the budget named", tk.Error)
					}
				}
			}
			if succeeded > 0 && peak < int64(len(answer)) {
				t.Errorf("peak charge %d, less than one answer (%d)", peak, len(answer))
			}
			if n := len(e.biller.charges()); n != succeeded {
				t.Errorf("%d charges for %d succeeded tasks", n, succeeded)
			}
		})
	}
}
