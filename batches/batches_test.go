package batches

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/caddy-air/caddy-air/billing"
	"github.com/caddy-air/caddy-air/holds"
	"github.com/caddy-air/caddy-air/mockprovider"
	"github.com/caddy-air/caddy-air/providers"
	"github.com/caddy-air/caddy-air/store"
	"github.com/caddy-air/caddy-air/store/badger"
)

// ledger is a Biller that keeps each record once by id, as the ledger does.
type ledger struct {
	mu    sync.Mutex
	recs  map[string]billing.Record
	calls int
}

func (l *ledger) Charge(_ context.Context, rec billing.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls++
	if _, ok := l.recs[rec.ID]; !ok {
		l.recs[rec.ID] = rec
	}
	return nil
}

// env is a service on a Badger store and the mock provider.
type env struct {
	repos store.Repos
	table *providers.Table
	led   *ledger
}

func newEnv(t testing.TB) *env {
	t.Helper()
	srv := httptest.NewServer(mockprovider.New(mockprovider.Config{APIKey: "sk-up"}))
	t.Cleanup(srv.Close)
	repos, err := badger.OpenRepos(badger.Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = repos.Close() })
	p := &providers.Provider{Name: "mock", Protocol: providers.ProtocolOpenAI, BaseURLs: []string{srv.URL + "/v1"}, APIKeys: []string{"sk-up"}}
	other := &providers.Provider{Name: "other", Protocol: providers.ProtocolOpenAI, BaseURLs: []string{srv.URL + "/v1"}, APIKeys: []string{"sk-up"}}
	table, err := providers.NewTable([]*providers.Provider{p, other}, []*providers.Route{
		{Pattern: "mock-chat", Kind: providers.KindChat, Provider: p, UpstreamModel: "up-chat"},
		{Pattern: "mock-embed", Kind: providers.KindEmbedding, Provider: p},
		{Pattern: "other-chat", Kind: providers.KindChat, Provider: other},
	})
	if err != nil {
		t.Fatal(err)
	}
	return &env{repos: repos, table: table, led: &ledger{recs: map[string]billing.Record{}}}
}

func (e *env) service(t testing.TB, c Config) *Service {
	t.Helper()
	c.Files, c.Batches, c.Media, c.Routes, c.Biller = e.repos.Files, e.repos.Batches, e.repos.Media, e.table, e.led
	c.PollInterval = 50 * time.Millisecond
	s, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

var alice = Owner{User: "alice", KeyID: "key_a"}

func chatLines(n int) string {
	var b strings.Builder
	for i := range n {
		b.WriteString(`{"custom_id":"req-` + string(rune('a'+i)) + `","method":"POST","url":"/v1/chat/completions","body":{"model":"mock-chat","messages":[{"role":"user","content":"hi"}],"max_tokens":20}}` + "\n")
	}
	return b.String()
}

// TestBatchBilledOncePerLine runs a batch through two services on one
// store: it completes, its output is re-hosted as a file of the user's
// with a line per request, and each line is on the ledger once, at the
// batch service tier, under the batch's id and the line's custom_id.
func TestBatchBilledOncePerLine(t *testing.T) {
	e := newEnv(t)
	s1, s2 := e.service(t, Config{}), e.service(t, Config{})
	ctx := context.Background()
	f, aerr := s1.Upload(ctx, alice, PurposeBatch, "in.jsonl", strings.NewReader(chatLines(3)))
	if aerr != nil {
		t.Fatal(aerr)
	}
	var estimate billing.Usage
	b, aerr := s1.Create(ctx, alice, []byte(`{"input_file_id":"`+f.ID+`","endpoint":"/v1/chat/completions","completion_window":"24h"}`),
		func(model string, u billing.Usage) (holds.Hold, error) { estimate = u; return nil, nil })
	if aerr != nil {
		t.Fatal(aerr)
	}
	if b.RequestCounts.Total != 3 || estimate.Output != 60 || estimate.Input <= 0 {
		t.Errorf("created %+v with estimate %+v; want 3 requests, 60 output tokens reserved", b.RequestCounts, estimate)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		var wg sync.WaitGroup
		for _, s := range []*Service{s1, s2} {
			wg.Go(func() { s.Sweep(ctx) })
		}
		wg.Wait()
		got, aerr := s2.GetBatch(ctx, alice, b.ID)
		if aerr != nil {
			t.Fatal(aerr)
		}
		if got.Status == StatusCompleted {
			b = got
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("batch still %s", got.Status)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if b.OutputFileID == nil || b.CompletedAt == nil {
		t.Fatalf("completed batch without output file or time: %+v", b)
	}
	m, aerr := s1.OpenFile(ctx, alice, *b.OutputFileID)
	if aerr != nil {
		t.Fatal(aerr)
	}
	out, _ := io.ReadAll(m.Content)
	m.Content.Close()
	if n := strings.Count(string(out), "\n"); n != 3 {
		t.Errorf("output has %d lines, want 3:\n%s", n, out)
	}
	if _, aerr := s1.OpenFile(ctx, Owner{User: "bob"}, *b.OutputFileID); aerr == nil || aerr.Status != http.StatusNotFound {
		t.Errorf("another user opened the output: %v", aerr)
	}
	if len(e.led.recs) != 3 {
		t.Fatalf("ledger has %d records, want 3: %v", len(e.led.recs), e.led.recs)
	}
	for _, cid := range []string{"req-a", "req-b", "req-c"} {
		rec, ok := e.led.recs[b.ID+"/"+cid]
		if !ok {
			t.Errorf("no record for line %s", cid)
			continue
		}
		if rec.ServiceTier != ServiceTier || rec.Model != "mock-chat" || rec.User != "alice" || rec.KeyID != "key_a" ||
			rec.Usage.Output != 7 || rec.Usage.Input <= 0 || rec.Endpoint != EndpointBatch {
			t.Errorf("record %s = %+v", cid, rec)
		}
	}
	// A key of alice's scoped to other models does not see the batch.
	embedOnly := Owner{User: "alice", KeyID: "key_e", Allows: func(m string) bool { return m == "mock-embed" }}
	if _, aerr := s1.GetBatch(ctx, embedOnly, b.ID); aerr == nil || aerr.Status != http.StatusNotFound {
		t.Errorf("a key scoped to other models read the batch: %v", aerr)
	}
	if l, _ := s1.ListBatches(ctx, embedOnly, "", 10); len(l.Data) != 0 {
		t.Errorf("a key scoped to other models listed %d batches", len(l.Data))
	}
	if l, _ := s1.ListBatches(ctx, alice, "", 10); len(l.Data) != 1 || l.Data[0].ID != b.ID {
		t.Errorf("alice's batches: %+v", l)
	}
	// A batch that ended is never worked on again.
	calls := e.led.calls
	s1.Sweep(ctx)
	s2.Sweep(ctx)
	if e.led.calls != calls {
		t.Errorf("an ended batch was billed again (%d charges, then %d)", calls, e.led.calls)
	}
}

// TestCreateRefuses: each bad input gets a clear error, and nothing is
// submitted upstream.
func TestCreateRefuses(t *testing.T) {
	e := newEnv(t)
	s := e.service(t, Config{MaxFileBytes: 4096, MaxFiles: 3})
	ctx := context.Background()
	scoped := Owner{User: "alice", KeyID: "key_s", Allows: func(m string) bool { return m == "mock-embed" }}
	good := `{"custom_id":"a","method":"POST","url":"/v1/chat/completions","body":{"model":"mock-chat"}}` + "\n"
	for _, tc := range []struct {
		name, input string
		owner       Owner
		status      int
		want        string
	}{
		{"malformed line", good + "{not json\n", alice, 400, "line 2: not valid JSON"},
		{"repeated member", good + `{"custom_id":"b","custom_id":"c","method":"POST","url":"/v1/chat/completions","body":{"model":"mock-chat"}}`, alice, 400, "line 2: member 'custom_id' appears more than once"},
		{"repeated escaped member", good + `{"custom_id":"b","custom\u005fid":"c","method":"POST","url":"/v1/chat/completions","body":{"model":"mock-chat"}}`, alice, 400, "line 2: member 'custom_id' appears more than once"},
		{"repeated nested member", `{"custom_id":"a","method":"POST","url":"/v1/chat/completions","body":{"model":"mock-chat","messages":[{"role":"user","role":"system"}]}}`, alice, 400, "line 1: member 'role' appears more than once"},
		{"repeated custom_id", good + good, alice, 400, "line 2: custom_id 'a' is used by an earlier line"},
		{"wrong url", `{"custom_id":"a","method":"POST","url":"/v1/embeddings","body":{"model":"mock-chat"}}`, alice, 400, "line 1: url must be"},
		{"model the key may not use", good, scoped, 400, "line 1: this key may not use model 'mock-chat'"},
		{"unknown model", `{"custom_id":"a","method":"POST","url":"/v1/chat/completions","body":{"model":"nope"}}`, alice, 400, "line 1: model 'nope' does not serve"},
		{"two providers", good + `{"custom_id":"b","method":"POST","url":"/v1/chat/completions","body":{"model":"other-chat"}}`, alice, 400, "line 2: model 'other-chat' is served by provider 'other'"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, aerr := s.Upload(ctx, tc.owner, PurposeBatch, "in.jsonl", strings.NewReader(tc.input))
			if aerr != nil {
				t.Fatal(aerr)
			}
			defer s.DeleteFile(ctx, tc.owner, f.ID)
			_, aerr = s.Create(ctx, tc.owner, []byte(`{"input_file_id":"`+f.ID+`","endpoint":"/v1/chat/completions","completion_window":"24h"}`), nil)
			if aerr == nil || aerr.Status != tc.status || !strings.Contains(aerr.Message, tc.want) {
				t.Errorf("Create = %v, want %d %q", aerr, tc.status, tc.want)
			}
		})
	}
	if _, aerr := s.Upload(ctx, alice, PurposeBatch, "big.jsonl", strings.NewReader(strings.Repeat(good, 100))); aerr == nil || aerr.Status != http.StatusRequestEntityTooLarge {
		t.Errorf("oversized upload = %v, want 413", aerr)
	}
	for range 3 {
		if _, aerr := s.Upload(ctx, alice, PurposeBatch, "in.jsonl", strings.NewReader(good)); aerr != nil {
			t.Fatal(aerr)
		}
	}
	if _, aerr := s.Upload(ctx, alice, PurposeBatch, "in.jsonl", strings.NewReader(good)); aerr == nil || aerr.Status != http.StatusTooManyRequests {
		t.Errorf("upload beyond MaxFiles = %v, want 429", aerr)
	}
	if l, _ := s.ListFiles(ctx, alice, "", 10); len(l.Data) != 3 {
		t.Errorf("listed %d files, want 3", len(l.Data))
	}
}

// flaky fails every charge after the first ok ones, until healed.
type flaky struct {
	*ledger
	ok       int
	healed   bool
	failures int
}

func (f *flaky) Charge(ctx context.Context, rec billing.Record) error {
	f.mu.Lock()
	fail := !f.healed && f.calls >= f.ok
	if fail {
		f.failures++
	}
	f.mu.Unlock()
	if fail {
		return errors.New("ledger unavailable")
	}
	return f.ledger.Charge(ctx, rec)
}

// failed returns the failed charges so far.
func (f *flaky) failed() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.failures
}

// sweepUntil sweeps s until batch id of alice's has status, or fails.
func sweepUntil(t *testing.T, s *Service, id string, cond func(*Batch) bool) *Batch {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		s.Sweep(context.Background())
		b, aerr := s.GetBatch(context.Background(), alice, id)
		if aerr != nil {
			t.Fatal(aerr)
		}
		if cond(b) {
			return b
		}
		if time.Now().After(deadline) {
			t.Fatalf("batch %s still %s", id, b.Status)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestBatchBillingResumes: billing that stops part way (the ledger fails
// after two lines, as a crash would stop it) is resumed by the next step,
// which charges every line again: the ledger keeps each line once, and
// the batch ends only once all are on it.
func TestBatchBillingResumes(t *testing.T) {
	e := newEnv(t)
	bill := &flaky{ledger: e.led, ok: 2}
	s := e.service(t, Config{})
	s.biller = bill
	ctx := context.Background()
	f, _ := s.Upload(ctx, alice, PurposeBatch, "in.jsonl", strings.NewReader(chatLines(5)))
	b, aerr := s.Create(ctx, alice, []byte(`{"input_file_id":"`+f.ID+`","endpoint":"/v1/chat/completions","completion_window":"24h"}`), nil)
	if aerr != nil {
		t.Fatal(aerr)
	}
	sweepUntil(t, s, b.ID, func(*Batch) bool { return bill.failed() > 0 })
	if got, _ := s.GetBatch(ctx, alice, b.ID); got.Status == StatusCompleted || len(e.led.recs) != 2 {
		t.Fatalf("after a failed charge: status %s, %d records; want not completed, 2", got.Status, len(e.led.recs))
	}
	bill.mu.Lock()
	bill.healed = true
	bill.mu.Unlock()
	// The retry comes after the backoff (the poll interval, doubled).
	b = sweepUntil(t, s, b.ID, func(b *Batch) bool { return b.Status == StatusCompleted })
	if len(e.led.recs) != 5 || e.led.calls < 7 {
		t.Errorf("%d records after %d charges; want 5, the first two charged again", len(e.led.recs), e.led.calls)
	}
}

// TestOutputBeyondUploadLimit: an output larger than the upload limit
// (an embeddings batch's outgrows its input) is re-hosted and billed.
func TestOutputBeyondUploadLimit(t *testing.T) {
	e := newEnv(t)
	input := chatLines(20)
	s := e.service(t, Config{MaxFileBytes: int64(len(input))})
	ctx := context.Background()
	f, aerr := s.Upload(ctx, alice, PurposeBatch, "in.jsonl", strings.NewReader(input))
	if aerr != nil {
		t.Fatal(aerr)
	}
	b, aerr := s.Create(ctx, alice, []byte(`{"input_file_id":"`+f.ID+`","endpoint":"/v1/chat/completions","completion_window":"24h"}`), nil)
	if aerr != nil {
		t.Fatal(aerr)
	}
	b = sweepUntil(t, s, b.ID, func(b *Batch) bool { return b.Status == StatusCompleted })
	out, aerr := s.GetFile(ctx, alice, *b.OutputFileID)
	if aerr != nil || out.Bytes <= int64(len(input)) || len(e.led.recs) != 20 {
		t.Fatalf("output %+v (%v), %d records; want an output larger than the input, 20 records", out, aerr, len(e.led.recs))
	}
}

// TestBatchErrorFile: the lines the provider failed are in the batch's
// error file, re-hosted as a file of the user's, and are not billed.
func TestBatchErrorFile(t *testing.T) {
	e := newEnv(t)
	s := e.service(t, Config{})
	ctx := context.Background()
	input := strings.Replace(chatLines(4), `"content":"hi"`, `"content":"please fail this one"`, 1)
	f, _ := s.Upload(ctx, alice, PurposeBatch, "in.jsonl", strings.NewReader(input))
	h := &testHold{}
	b, aerr := s.Create(ctx, alice, []byte(`{"input_file_id":"`+f.ID+`","endpoint":"/v1/chat/completions","completion_window":"24h"}`),
		func(string, billing.Usage) (holds.Hold, error) { return h, nil })
	if aerr != nil {
		t.Fatal(aerr)
	}
	b = sweepUntil(t, s, b.ID, func(b *Batch) bool { return b.Status == StatusCompleted })
	s.Sweep(ctx)
	if h.ended() != "released" {
		t.Errorf("the hold ended %q, want released once (the lines are charged on their own)", h.ended())
	}
	if b.ErrorFileID == nil || b.RequestCounts.Failed != 1 || b.RequestCounts.Completed != 3 {
		t.Fatalf("batch %+v: want an error file, 3 completed and 1 failed", b)
	}
	m, aerr := s.OpenFile(ctx, alice, *b.ErrorFileID)
	if aerr != nil {
		t.Fatal(aerr)
	}
	errs, _ := io.ReadAll(m.Content)
	m.Content.Close()
	if !strings.Contains(string(errs), `"custom_id":"req-a"`) || strings.Count(string(errs), "\n") != 1 {
		t.Errorf("error file: %s", errs)
	}
	if _, ok := e.led.recs[b.ID+"/req-a"]; ok || len(e.led.recs) != 3 {
		t.Errorf("records %v: want the 3 lines that succeeded", e.led.recs)
	}
}

// TestBatchGivenUp: a batch the provider has not ended after MaxRunning
// is given up: expired, billed for nothing, its hold released.
func TestBatchGivenUp(t *testing.T) {
	e := newEnv(t)
	s := e.service(t, Config{MaxRunning: time.Nanosecond})
	ctx := context.Background()
	f, _ := s.Upload(ctx, alice, PurposeBatch, "in.jsonl", strings.NewReader(chatLines(2)))
	h := &testHold{}
	b, aerr := s.Create(ctx, alice, []byte(`{"input_file_id":"`+f.ID+`","endpoint":"/v1/chat/completions","completion_window":"24h"}`),
		func(string, billing.Usage) (holds.Hold, error) { return h, nil })
	if aerr != nil {
		t.Fatal(aerr)
	}
	time.Sleep(time.Second) // CreatedAt is in seconds
	b = sweepUntil(t, s, b.ID, func(b *Batch) bool { return b.Status == StatusExpired })
	if b.ExpiredAt == nil || b.OutputFileID != nil || len(e.led.recs) != 0 || h.ended() != "released" {
		t.Errorf("given up: %+v, %d records, hold %q; want expired, nothing billed, the hold released", b, len(e.led.recs), h.ended())
	}
}

// testHold records how it ended.
type testHold struct {
	mu  sync.Mutex
	end string
}

func (h *testHold) Charge(context.Context, billing.Record) error { h.set("charged"); return nil }
func (h *testHold) Release()                                     { h.set("released") }
func (h *testHold) Cancel()                                      { h.set("cancelled") }
func (h *testHold) set(s string)                                 { h.mu.Lock(); h.end += s; h.mu.Unlock() }
func (h *testHold) ended() string                                { h.mu.Lock(); defer h.mu.Unlock(); return h.end }

// TestBatchCancel: a batch cancelled part way ends cancelled, with an
// output of what completed, and is billed for those lines only.
func TestBatchCancel(t *testing.T) {
	e := newEnv(t)
	s := e.service(t, Config{})
	ctx := context.Background()
	f, _ := s.Upload(ctx, alice, PurposeBatch, "in.jsonl", strings.NewReader(chatLines(20)))
	b, aerr := s.Create(ctx, alice, []byte(`{"input_file_id":"`+f.ID+`","endpoint":"/v1/chat/completions","completion_window":"24h"}`), nil)
	if aerr != nil {
		t.Fatal(aerr)
	}
	time.Sleep(time.Second) // a third of the mock's 3 s
	if c, aerr := s.Cancel(ctx, alice, b.ID); aerr != nil || c.Status != StatusCancelling || c.CancellingAt == nil {
		t.Fatalf("cancel: %+v, %v", c, aerr)
	}
	b = sweepUntil(t, s, b.ID, func(b *Batch) bool { return b.Status == StatusCancelled })
	done := b.RequestCounts.Completed
	if done == 0 || done == 20 || b.OutputFileID == nil || b.CancelledAt == nil {
		t.Fatalf("cancelled batch %+v: want some lines completed, not all, and an output", b)
	}
	if len(e.led.recs) != done {
		t.Errorf("%d records for %d completed lines", len(e.led.recs), done)
	}
}

// TestRetryAfterCapped: a provider that answers a poll with 503 and a
// Retry-After however far off has the batch polled again within the
// backoff's cap, not at its word.
func TestRetryAfterCapped(t *testing.T) {
	e := newEnv(t)
	mock := mockprovider.New(mockprovider.Config{APIKey: "sk-up"})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && strings.Contains(r.URL.Path, "/batches/") {
			w.Header().Set("Retry-After", "999999999")
			http.Error(w, `{"error":{"message":"busy"}}`, http.StatusServiceUnavailable)
			return
		}
		mock.ServeHTTP(w, r)
	}))
	defer srv.Close()
	e.table.Provider("mock").BaseURLs = []string{srv.URL + "/v1"}
	s := e.service(t, Config{})
	ctx := context.Background()
	f, _ := s.Upload(ctx, alice, PurposeBatch, "in.jsonl", strings.NewReader(chatLines(1)))
	b, aerr := s.Create(ctx, alice, []byte(`{"input_file_id":"`+f.ID+`","endpoint":"/v1/chat/completions","completion_window":"24h"}`), nil)
	if aerr != nil {
		t.Fatal(aerr)
	}
	time.Sleep(100 * time.Millisecond) // past the first poll's due time
	before := time.Now()
	s.Sweep(ctx)
	rec, err := e.repos.Batches.Get(ctx, b.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !rec.Working || rec.Due.Before(before) || rec.Due.After(time.Now().Add(defaultMaxBackoff)) {
		t.Errorf("next poll at %v, want within %v of now", rec.Due, defaultMaxBackoff)
	}
}

// TestSubmitRefusedScrubbed: a provider that refuses the batch's input
// gets the client a 502 with the provider's message, its key scrubbed;
// nothing is stored and the hold is cancelled.
func TestSubmitRefusedScrubbed(t *testing.T) {
	e := newEnv(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = io.WriteString(w, `{"error":{"message":"Incorrect API key provided: sk-up","type":"invalid_request_error"}}`)
	}))
	defer srv.Close()
	e.table.Provider("mock").BaseURLs = []string{srv.URL + "/v1"}
	s := e.service(t, Config{})
	ctx := context.Background()
	f, _ := s.Upload(ctx, alice, PurposeBatch, "in.jsonl", strings.NewReader(chatLines(1)))
	h := &testHold{}
	_, aerr := s.Create(ctx, alice, []byte(`{"input_file_id":"`+f.ID+`","endpoint":"/v1/chat/completions","completion_window":"24h"}`),
		func(string, billing.Usage) (holds.Hold, error) { return h, nil })
	if aerr == nil || aerr.Status != http.StatusBadGateway || !strings.Contains(aerr.Message, "status 401") || strings.Contains(aerr.Message, "sk-up") {
		t.Errorf("Create = %v, want 502 with the provider's status and without its key", aerr)
	}
	if h.ended() != "cancelled" {
		t.Errorf("hold ended %q, want cancelled", h.ended())
	}
	if l, _ := s.ListBatches(ctx, alice, "", 10); len(l.Data) != 0 {
		t.Errorf("a refused batch was stored: %+v", l.Data)
	}
}

// TestStepHandsBack: a step whose context ends (a reload, a stop) hands
// its claimed batch back, due at once, so that the next poller need not
// wait for the lease.
func TestStepHandsBack(t *testing.T) {
	e := newEnv(t)
	s := e.service(t, Config{})
	ctx := context.Background()
	f, _ := s.Upload(ctx, alice, PurposeBatch, "in.jsonl", strings.NewReader(chatLines(1)))
	b, aerr := s.Create(ctx, alice, []byte(`{"input_file_id":"`+f.ID+`","endpoint":"/v1/chat/completions","completion_window":"24h"}`), nil)
	if aerr != nil {
		t.Fatal(aerr)
	}
	time.Sleep(100 * time.Millisecond)
	claimed, err := e.repos.Batches.ClaimDue(ctx, time.Now(), time.Hour, 1)
	if err != nil || len(claimed) != 1 || claimed[0].ID != b.ID {
		t.Fatalf("claim: %v %v", claimed, err)
	}
	stopped, cancel := context.WithCancel(ctx)
	cancel()
	s.step(stopped, claimed[0])
	rec, err := e.repos.Batches.Get(ctx, b.ID)
	if err != nil || !rec.Working || rec.Due.After(time.Now()) {
		t.Errorf("after a stopped step: due %v (%v), want now, not the lease's end", rec.Due, err)
	}
}
