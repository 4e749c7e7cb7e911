package tasks

import (
	"context"
	"encoding/base64"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/caddy-air/caddy-air/providers"
	"github.com/caddy-air/caddy-air/store/badger"
	"github.com/caddy-air/caddy-air/store/mediafs"
)

const testMediaBase = "http://gw.test/media"

// recorded is one request a fake upstream received.
type recorded struct {
	method, path string
	header       http.Header
	body         []byte
}

// env is a fake upstream, a real Badger store, a real media store and a
// routing table to the upstream.
type env struct {
	t        testing.TB
	db       *badger.DB
	media    *mediafs.Store
	mediaDir string
	srv      *httptest.Server
	mux      *http.ServeMux
	table    *providers.Table
	biller   *fakeBiller

	mu   sync.Mutex
	reqs []recorded
}

// newEnv starts a fake upstream speaking protocol; every route is served by
// it. The provider base URL ends in /v1 (OpenAI) or /api/v1 (DashScope).
func newEnv(t testing.TB, protocol string, routes ...*providers.Route) *env {
	t.Helper()
	db, err := badger.Open(badger.Options{Dir: t.TempDir(), GCInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	mediaDir := t.TempDir()
	media, err := mediafs.Open(mediafs.Options{Dir: mediaDir})
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, db: db, media: media, mediaDir: mediaDir, mux: http.NewServeMux(), biller: &fakeBiller{}}
	e.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		e.mu.Lock()
		e.reqs = append(e.reqs, recorded{method: r.Method, path: r.URL.Path, header: r.Header.Clone(), body: body})
		e.mu.Unlock()
		r.Body = io.NopCloser(strings.NewReader(string(body)))
		e.mux.ServeHTTP(w, r)
	}))
	t.Cleanup(e.srv.Close)
	base := e.srv.URL + "/v1"
	if protocol == providers.ProtocolDashScope {
		base = e.srv.URL + "/api/v1"
	}
	p := &providers.Provider{Name: "up", Protocol: protocol, BaseURLs: []string{base}, APIKeys: []string{"sk-upstream-1"}, Timeout: 10 * time.Second}
	for _, r := range routes {
		r.Provider = p
	}
	e.table, err = providers.NewTable([]*providers.Provider{p}, routes)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// service returns a Service on the env's store with short intervals.
func (e *env) service(mod func(*Config)) *Service {
	e.t.Helper()
	c := Config{
		Store: badger.NewTasks(e.db), Media: badger.WithLegacyMedia(e.media, e.db), Routes: e.table, Biller: e.biller,
		PollInterval: 20 * time.Millisecond, ImagePollInterval: 10 * time.Millisecond,
		MaxBackoff: 100 * time.Millisecond, Lease: 5 * time.Second,
	}
	if mod != nil {
		mod(&c)
	}
	s, err := New(c)
	if err != nil {
		e.t.Fatal(err)
	}
	return s
}

// run starts s's poller and returns a function that stops it and waits.
func (e *env) run(s *Service) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); s.Run(ctx) }()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); <-done }) }
	e.t.Cleanup(stop)
	return stop
}

// requests returns the recorded requests with the method and path prefix.
func (e *env) requests(method, prefix string) []recorded {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []recorded
	for _, r := range e.reqs {
		if r.method == method && strings.HasPrefix(r.path, prefix) {
			out = append(out, r)
		}
	}
	return out
}

// count is len(requests(method, prefix)).
func (e *env) count(method, prefix string) int { return len(e.requests(method, prefix)) }

// readMedia returns the content type and bytes of a re-hosted file.
func readMedia(s *Service, id string) (string, []byte, error) {
	m, err := s.Media(context.Background(), id)
	if err != nil {
		return "", nil, err
	}
	defer m.Content.Close()
	data, err := io.ReadAll(m.Content)
	return m.ContentType, data, err
}

// waitFor polls cond until it holds, failing the test after 15 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitStatus waits until the task reaches status and returns it.
func waitStatus(t *testing.T, s *Service, owner Owner, id, status string) *Task {
	t.Helper()
	var got *Task
	waitFor(t, "task "+id+" to be "+status, func() bool {
		tk, aerr := s.Get(context.Background(), owner, id)
		if aerr != nil {
			t.Fatalf("get %s: %v", id, aerr)
		}
		got = tk
		return tk.Status == status
	})
	return got
}

// waitBilled waits until the stored task is marked billed.
func waitBilled(t *testing.T, s *Service, id string) *Task {
	t.Helper()
	var got *Task
	waitFor(t, "task "+id+" to be billed", func() bool {
		tk, err := s.load(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		got = tk
		return tk.Billing == BillingDone
	})
	return got
}

// fakeBiller records charges; it fails while failing is set.
type fakeBiller struct {
	mu      sync.Mutex
	calls   []Charge
	failing bool
}

func (b *fakeBiller) ChargeTask(_ context.Context, c Charge) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.failing {
		return errors.New("ledger unavailable")
	}
	b.calls = append(b.calls, c)
	return nil
}

func (b *fakeBiller) charges() []Charge {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]Charge(nil), b.calls...)
}

func (b *fakeBiller) setFailing(v bool) {
	b.mu.Lock()
	b.failing = v
	b.mu.Unlock()
}

// writeJSON answers with status and a JSON body.
func writeJSON(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, body)
}

var (
	alice = Owner{User: "alice", KeyID: "key_a"}
	bob   = Owner{User: "bob", KeyID: "key_b"}
)

// pngBytes is the start of a PNG file, enough for content sniffing.
var pngBytes = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDRfake-image-data")

// pngB64 is pngBytes in base64, as b64_json.
var pngB64 = base64.StdEncoding.EncodeToString(pngBytes)

// webpBytes is the start of a WebP file, enough for content sniffing.
var webpBytes = []byte("RIFF\x00\x00\x00\x00WEBPVP8 fake-webp-data")

// mp4Bytes is the start of an MP4 file, enough for content sniffing.
var mp4Bytes = []byte("\x00\x00\x00\x18ftypmp42\x00\x00\x00\x00mp42isomfake-video-data")
