package alerts

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestVerify(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	body := []byte(`{"id":"evt_1"}`)
	good := Sign("s3cret", now, body)
	for i, tc := range []struct {
		secret, header string
		body           []byte
		at             time.Time
		ok             bool
	}{
		{"s3cret", good, body, now, true},
		{"s3cret", good, body, now.Add(4 * time.Minute), true},
		{"other", good, body, now, false},
		{"s3cret", good, []byte(`{"id":"evt_2"}`), now, false},
		{"s3cret", good, body, now.Add(10 * time.Minute), false},
		{"s3cret", "v1=abc", body, now, false},
		{"s3cret", strings.Replace(good, "t=1800000000", "t=1800000001", 1), body, now, false},
	} {
		err := Verify(tc.secret, tc.header, tc.body, tc.at, 5*time.Minute)
		if (err == nil) != tc.ok {
			t.Errorf("Test %d: Verify = %v, want ok %v", i, err, tc.ok)
		}
	}
}

// resetOnce is a receiver whose first request is read and then its
// connection reset (an RST, as a crashed receiver gives), and whose later
// requests are verified and counted.
type resetOnce struct {
	t         *testing.T
	secret    string
	calls     atomic.Int32
	mu        sync.Mutex
	delivered []string // event ids accepted
	bad       []string
}

func (rc *resetOnce) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	if rc.calls.Add(1) == 1 {
		conn, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			rc.t.Errorf("hijack: %v", err)
			return
		}
		_ = conn.(*net.TCPConn).SetLinger(0)
		conn.Close()
		return
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if err := Verify(rc.secret, r.Header.Get(SignatureHeader), body, time.Now(), time.Minute); err != nil {
		rc.bad = append(rc.bad, err.Error())
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	var e Event
	if err := json.Unmarshal(body, &e); err != nil || e.ID != r.Header.Get(IDHeader) {
		rc.bad = append(rc.bad, "body or id header wrong")
	}
	rc.delivered = append(rc.delivered, e.ID)
}

func TestSendRetriesAResetDelivery(t *testing.T) {
	rc := &resetOnce{t: t, secret: "whsec-test"}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	s := &Sender{InitialInterval: time.Millisecond}
	w := &Webhook{Name: "ops", URL: srv.URL + "/hook?token=abc", Secret: rc.secret}
	attempts, err := s.Send(context.Background(), w, &Event{ID: "evt_a", Kind: KindBreakerOpen, Message: "openai opened"})
	if err != nil {
		t.Fatalf("Send: %v", err)
	}
	if attempts != 2 || rc.calls.Load() != 2 {
		t.Errorf("attempts %d, calls %d; want 2 and 2 (one reset, one retry)", attempts, rc.calls.Load())
	}
	if len(rc.delivered) != 1 || rc.delivered[0] != "evt_a" || len(rc.bad) != 0 {
		t.Errorf("delivered %v, bad %v; want evt_a once with a valid signature", rc.delivered, rc.bad)
	}
}

func TestSendGivesUpWithoutLeakingTheURL(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.WriteHeader(http.StatusBadGateway)
	}))
	defer srv.Close()
	s := &Sender{InitialInterval: time.Millisecond, MaxTries: 3}
	_, err := s.Send(context.Background(), &Webhook{Name: "x", URL: srv.URL + "/T0/B0/tokensecret"}, &Event{ID: "evt_b"})
	if err == nil || calls.Load() != 3 {
		t.Fatalf("err %v after %d calls; want an error after 3", err, calls.Load())
	}
	if strings.Contains(err.Error(), "tokensecret") {
		t.Errorf("error %q names the URL", err)
	}
	// A 4xx other than 408/429 is not retried.
	calls.Store(0)
	srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.WriteHeader(http.StatusNotFound)
	})
	if _, err := s.Send(context.Background(), &Webhook{Name: "x", URL: srv.URL}, &Event{ID: "evt_c"}); err == nil || calls.Load() != 1 {
		t.Errorf("404: err %v after %d calls; want an error after 1", err, calls.Load())
	}
}

func TestSlackBody(t *testing.T) {
	w := &Webhook{Format: FormatSlack}
	b, err := w.Body(&Event{ID: "evt_1", Kind: KindLedgerDown, Message: "the ledger is unavailable"})
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil || len(m) != 1 || !strings.Contains(m["text"].(string), "the ledger is unavailable") {
		t.Errorf("slack body %s: want only a text with the message", b)
	}
}
