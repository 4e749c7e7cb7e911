package integration

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// upstream is a fake provider: an httptest server that records the exact
// bytes and headers it receives and answers with a test's handler.
type upstream struct {
	*httptest.Server
	hits atomic.Int32

	mu      sync.Mutex
	bodies  [][]byte
	headers []http.Header
	paths   []string
}

// newUpstream starts a fake provider; answer writes each response.
func newUpstream(t *testing.T, answer func(w http.ResponseWriter, r *http.Request, body []byte)) *upstream {
	t.Helper()
	u := &upstream{}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.hits.Add(1)
		body, _ := io.ReadAll(r.Body)
		u.mu.Lock()
		u.bodies = append(u.bodies, body)
		u.headers = append(u.headers, r.Header.Clone())
		u.paths = append(u.paths, r.URL.Path)
		u.mu.Unlock()
		answer(w, r, body)
	}))
	t.Cleanup(u.Close)
	return u
}

// lastBody returns the body of the last request received.
func (u *upstream) lastBody(t *testing.T) []byte {
	t.Helper()
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.bodies) == 0 {
		t.Fatal("the upstream received no request")
	}
	return u.bodies[len(u.bodies)-1]
}

// lastHeader returns the headers of the last request received.
func (u *upstream) lastHeader() http.Header {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.headers[len(u.headers)-1]
}

// providerBlock returns a Caddyfile provider block for upstreams.
func providerBlock(name, protocol, extra string, ups ...*upstream) string {
	s := fmt.Sprintf("provider %s {\n\t\t\tprotocol %s\n", name, protocol)
	for i, u := range ups {
		s += fmt.Sprintf("\t\t\tbase_url %s/v1\n\t\t\tapi_key upstream-key-%d\n", u.URL, i)
	}
	return s + extra + "\n\t\t}"
}

// sseWriter writes SSE bodies and flushes each event.
func sseWrite(w http.ResponseWriter, events ...string) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	for _, e := range events {
		_, _ = io.WriteString(w, e)
		w.(http.Flusher).Flush()
	}
}

// ledgerRecord is a ledger record as the admin API lists it.
type ledgerRecord struct {
	ID       string `json:"id"`
	Endpoint string `json:"endpoint"`
	User     string `json:"user"`
	KeyID    string `json:"key_id"`
	Model    string `json:"model"`
	Provider string `json:"provider"`
	Source   string `json:"source"`
	Outcome  string `json:"outcome"`
	Status   int    `json:"status"`
	Tier     int    `json:"tier"`
	Priced   bool   `json:"priced"`
	Cost     string `json:"cost"`
	Images   int    `json:"images"`
	// ServiceTier is the service tier the upstream reported.
	ServiceTier string `json:"service_tier"`
	// Deployment is the deployment that answered, and ServedModel the
	// fallback model that did, if one did (issue #19).
	Deployment  string `json:"deployment"`
	ServedModel string `json:"served_model"`
	Usage       struct {
		Input           int64 `json:"input_tokens"`
		CacheCreation   int64 `json:"cache_creation_tokens"`
		CacheCreation1h int64 `json:"cache_creation_1h_tokens"`
		CacheRead       int64 `json:"cache_read_tokens"`
		Output          int64 `json:"output_tokens"`
		Reasoning       int64 `json:"reasoning_tokens"`
		AudioInput      int64 `json:"audio_input_tokens"`
		AudioOutput     int64 `json:"audio_output_tokens"`
		ImageInput      int64 `json:"image_input_tokens"`
		ImageOutput     int64 `json:"image_output_tokens"`
		WebSearches     int64 `json:"web_searches"`
		WebFetches      int64 `json:"web_fetches"`
		FileSearches    int64 `json:"file_searches"`
		CodeSessions    int64 `json:"code_sessions"`
		ImageCalls      int64 `json:"image_generation_calls"`
		// Characters, AudioMillis and SearchUnits are the quantities of
		// speech, transcriptions and rerank (issue #33).
		Characters  int64 `json:"characters"`
		AudioMillis int64 `json:"audio_ms"`
		SearchUnits int64 `json:"search_units"`
	} `json:"usage"`
	// Unpriced lists the charges the price file had no rule for (issue
	// #31).
	Unpriced []string `json:"unpriced"`
	// DurationMillis is how long the request took (issue #35).
	DurationMillis int64 `json:"duration_ms"`
	// Team and Tags are the request's team and tags (issue #32).
	Team string   `json:"team"`
	Tags []string `json:"tags"`
}

// ledgerOf returns the ledger records of user, after the asynchronous
// ledger writer has flushed.
func ledgerOf(t *testing.T, user string) []ledgerRecord {
	t.Helper()
	var out []ledgerRecord
	if status := adminJSON(t, http.MethodGet, "/air/ledger?flush=1&user="+url.QueryEscape(user), "", &out); status != http.StatusOK {
		t.Fatalf("reading the ledger: status %d", status)
	}
	return out
}

// waitLedger waits until user has n ledger records and returns them.
func waitLedger(t *testing.T, user string, n int) []ledgerRecord {
	t.Helper()
	var recs []ledgerRecord
	eventually(t, 10*time.Second, fmt.Sprintf("%d ledger records for %s", n, user), func() bool {
		recs = ledgerOf(t, user)
		return len(recs) >= n
	})
	if len(recs) != n {
		b, _ := json.Marshal(recs)
		t.Fatalf("%d ledger records for %s, want %d: %s", len(recs), user, n, b)
	}
	return recs
}
