package tasks

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"

	"github.com/caddy-air/caddy-air/apierror"
	"github.com/caddy-air/caddy-air/billing"
	"github.com/caddy-air/caddy-air/providers"
)

// fakeHold records how it was ended; Charge fails while chargeErr is set.
type fakeHold struct {
	mu        sync.Mutex
	chargeErr error
	charged   []billing.Record
	released  int
	cancelled int
}

func (h *fakeHold) Charge(_ context.Context, rec billing.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.charged = append(h.charged, rec)
	return h.chargeErr
}

func (h *fakeHold) Release() { h.mu.Lock(); h.released++; h.mu.Unlock() }
func (h *fakeHold) Cancel()  { h.mu.Lock(); h.cancelled++; h.mu.Unlock() }

// ends returns how many times h was charged, released and cancelled.
func (h *fakeHold) ends() (charged, released, cancelled int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.charged), h.released, h.cancelled
}

// admitWith returns an Admit that records the estimate and hands out h.
func admitWith(h *fakeHold, got *Estimate) Admit {
	return func(e Estimate) (Hold, *apierror.Error) {
		*got = e
		return h, nil
	}
}

func TestCreateEstimatesWhatItAsksFor(t *testing.T) {
	refused := apierror.New(http.StatusTooManyRequests, apierror.TypeInsufficient, "insufficient_quota", "no")
	tests := []struct {
		name, protocol, body string
		route                *providers.Route
		want                 Estimate
	}{
		{"image default", providers.ProtocolOpenAI, `{"model":"img","prompt":"x"}`,
			&providers.Route{Pattern: "img", Kind: providers.KindImage}, Estimate{Model: "img", Kind: "image", Images: 1}},
		{"image n", providers.ProtocolOpenAI, `{"model":"img","prompt":"x","n":3}`,
			&providers.Route{Pattern: "img", Kind: providers.KindImage}, Estimate{Model: "img", Kind: "image", Images: 3}},
		{"openai seconds", providers.ProtocolOpenAI, `{"model":"sora-2","prompt":"x","seconds":"12"}`,
			&providers.Route{Pattern: "sora-2", Kind: providers.KindVideo}, Estimate{Model: "sora-2", Kind: "video", VideoSeconds: 12}},
		{"openai default", providers.ProtocolOpenAI, `{"model":"sora-2","prompt":"x"}`,
			&providers.Route{Pattern: "sora-2", Kind: providers.KindVideo}, Estimate{Model: "sora-2", Kind: "video", VideoSeconds: 4}},
		{"dashscope duration", providers.ProtocolDashScope, `{"model":"wan","prompt":"x","duration":10}`,
			&providers.Route{Pattern: "wan", Kind: providers.KindVideo}, Estimate{Model: "wan", Kind: "video", VideoSeconds: 10}},
		{"openai duration", providers.ProtocolOpenAI, `{"model":"sora-2","prompt":"x","duration":8}`,
			&providers.Route{Pattern: "sora-2", Kind: providers.KindVideo}, Estimate{Model: "sora-2", Kind: "video", VideoSeconds: 8}},
		{"both, equal", providers.ProtocolOpenAI, `{"model":"sora-2","prompt":"x","duration":8,"seconds":"8"}`,
			&providers.Route{Pattern: "sora-2", Kind: providers.KindVideo}, Estimate{Model: "sora-2", Kind: "video", VideoSeconds: 8}},
		{"dashscope seconds", providers.ProtocolDashScope, `{"model":"wan","prompt":"x","seconds":10}`,
			&providers.Route{Pattern: "wan", Kind: providers.KindVideo}, Estimate{Model: "wan", Kind: "video", VideoSeconds: 10}},
		{"dashscope default", providers.ProtocolDashScope, `{"model":"wan","prompt":"x"}`,
			&providers.Route{Pattern: "wan", Kind: providers.KindVideo}, Estimate{Model: "wan", Kind: "video", VideoSeconds: 5}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, tt.protocol, tt.route)
			s := e.service(nil)
			var got Estimate
			tk, aerr := s.CreateHeld(context.Background(), alice, []byte(tt.body), nil, testMediaBase,
				func(est Estimate) (Hold, *apierror.Error) { got = est; return nil, refused })
			if aerr != refused || tk != nil {
				t.Fatalf("create = %v, %v; want the refusal", tk, aerr)
			}
			if got != tt.want {
				t.Errorf("estimate = %+v, want %+v", got, tt.want)
			}
			if n := len(e.requests("", "/")); n != 0 {
				t.Errorf("a refused create sent %d upstream requests", n)
			}
			if page, _ := s.List(context.Background(), alice, 10); len(page) != 0 {
				t.Errorf("a refused create stored %d tasks", len(page))
			}
		})
	}
}

func TestHoldEndsOnceWithTheTask(t *testing.T) {
	tests := []struct {
		name                      string
		final                     string // the upstream's last answer
		chargeErr                 error
		wantCharged, wantReleased int
		wantBilled                int // charges through the Biller
	}{
		{"succeeded", `{"id":"video_123","object":"video","status":"completed","progress":100,"seconds":"8"}`, nil, 1, 0, 0},
		{"failed", `{"id":"video_123","object":"video","status":"failed","error":{"code":"internal_error","message":"no"}}`, nil, 0, 1, 0},
		{"charge error", `{"id":"video_123","object":"video","status":"completed","progress":100,"seconds":"8"}`, errors.New("disk full"), 1, 0, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, providers.ProtocolOpenAI, &providers.Route{Pattern: "sora-2", Kind: providers.KindVideo})
			f := &fakeOpenAIVideo{}
			f.install(e)
			f.set(`{"id":"video_123","object":"video","status":"in_progress","progress":10}`)
			s := e.service(nil)
			h := &fakeHold{chargeErr: tt.chargeErr}
			var est Estimate
			tk, aerr := s.CreateHeld(context.Background(), alice, []byte(`{"model":"sora-2","prompt":"x","seconds":"8"}`), nil, testMediaBase, admitWith(h, &est))
			if aerr != nil || tk.Status != StatusRunning {
				t.Fatalf("create: %v %+v", aerr, tk)
			}
			if c, r, x := h.ends(); c+r+x != 0 || s.holds.Len() != 1 {
				t.Fatalf("hold ended (%d, %d, %d) or not kept (%d) while the task runs", c, r, x, s.holds.Len())
			}
			e.run(s)
			waitFor(t, "a poll", func() bool { return e.count("GET", "/v1/videos/video_123") > 0 })
			f.set(tt.final)
			waitFor(t, "the task to end", func() bool {
				got, _ := s.load(context.Background(), tk.ID)
				return got.holdEnded()
			})
			c, r, x := h.ends()
			if c != tt.wantCharged || r != tt.wantReleased || x != 0 {
				t.Errorf("hold charged %d, released %d, cancelled %d times; want %d, %d, 0", c, r, x, tt.wantCharged, tt.wantReleased)
			}
			if c == 1 && (h.charged[0].VideoMillis != 8000 || h.charged[0].ID != tk.ID) {
				t.Errorf("charge %+v", h.charged[0])
			}
			if n := len(e.biller.charges()); n != tt.wantBilled {
				t.Errorf("biller charged %d times, want %d", n, tt.wantBilled)
			}
			if s.holds.Len() != 0 {
				t.Errorf("%d holds kept after the task ended", s.holds.Len())
			}
		})
	}
}

func TestRefusedCreateCancelsItsHold(t *testing.T) {
	e := newEnv(t, providers.ProtocolOpenAI, &providers.Route{Pattern: "sora-2", Kind: providers.KindVideo})
	s := e.service(func(c *Config) { c.MaxConcurrentCreates = 1 })
	s.creates <- struct{}{} // every create slot taken
	h := &fakeHold{}
	var est Estimate
	_, aerr := s.CreateHeld(context.Background(), alice, []byte(`{"model":"sora-2","prompt":"x"}`), nil, testMediaBase, admitWith(h, &est))
	if aerr == nil || aerr.Status != http.StatusServiceUnavailable {
		t.Fatalf("create = %v, want 503", aerr)
	}
	if c, r, x := h.ends(); c != 0 || r != 0 || x != 1 {
		t.Errorf("hold charged %d, released %d, cancelled %d times; want cancelled once", c, r, x)
	}
	if s.holds.Len() != 0 {
		t.Errorf("%d holds kept", s.holds.Len())
	}
}

func TestHoldsSurviveAServiceAndEndElsewhere(t *testing.T) {
	e := newEnv(t, providers.ProtocolOpenAI, &providers.Route{Pattern: "sora-2", Kind: providers.KindVideo})
	f := &fakeOpenAIVideo{}
	f.install(e)
	f.set(`{"id":"video_123","object":"video","status":"in_progress","progress":10}`)
	ctx := context.Background()
	holds := NewHolds()

	// A reload: the next config's service shares the holds and charges
	// the task through the hold the first one took.
	s1 := e.service(func(c *Config) { c.Holds = holds })
	h1 := &fakeHold{}
	var est Estimate
	tk1, aerr := s1.CreateHeld(ctx, alice, []byte(`{"model":"sora-2","prompt":"x"}`), nil, testMediaBase, admitWith(h1, &est))
	if aerr != nil {
		t.Fatal(aerr)
	}
	s2 := e.service(func(c *Config) { c.Holds = holds })
	f.set(`{"id":"video_123","object":"video","status":"completed","progress":100,"seconds":"4"}`)
	stop := e.run(s2)
	waitBilled(t, s2, tk1.ID)
	stop()
	if c, r, _ := h1.ends(); c != 1 || r != 0 {
		t.Errorf("hold across a reload charged %d, released %d times; want charged once", c, r)
	}

	// Another instance (its own holds) ends a task: the sweep of the
	// instance that created it releases its hold.
	f.set(`{"id":"video_123","object":"video","status":"in_progress","progress":10}`)
	h2 := &fakeHold{}
	tk2, aerr := s1.CreateHeld(ctx, alice, []byte(`{"model":"sora-2","prompt":"x"}`), nil, testMediaBase, admitWith(h2, &est))
	if aerr != nil {
		t.Fatal(aerr)
	}
	other := e.service(nil)
	f.set(`{"id":"video_123","object":"video","status":"completed","progress":100,"seconds":"4"}`)
	e.run(other)
	waitBilled(t, other, tk2.ID)
	s1.sweepHolds(ctx)
	if c, r, _ := h2.ends(); c != 0 || r != 1 || holds.Len() != 0 {
		t.Errorf("hold of a task charged elsewhere: charged %d, released %d times, %d kept; want released once", c, r, holds.Len())
	}
}
