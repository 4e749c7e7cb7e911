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
)

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
